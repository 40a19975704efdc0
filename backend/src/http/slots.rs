//! Who may hold the server's WebSocket viewer slots: a bounded number in all, a share of them for
//! each share link, and a reserve that only the admin can take, so no single link (or a crowd of
//! links) can fill the server and lock its owner out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Concurrent WebSocket viewers served; more get 503. Each costs a task and at most
/// `CHANNEL_CAPACITY` frame references plus its socket buffers.
pub const MAX_VIEWERS: usize = 1024;
/// Slots only the admin can take (share links stop short of them).
pub const ADMIN_RESERVE: usize = 64;
/// Most viewers one share link may have at once: a link passed around a whole lab still leaves
/// room for the others.
pub const PER_LINK: usize = 256;

/// Who asks for a slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// The admin (token or admin cookie; everyone under `--no-auth`).
    Admin,
    /// A share link's viewers, by the link's id.
    Link(String),
}

/// The slots of one server; cheap to clone.
#[derive(Clone, Debug)]
pub struct ViewerSlots {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    total: usize,
    admin_reserve: usize,
    per_link: usize,
    used: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    all: usize,
    by_link: HashMap<String, usize>,
}

/// A taken slot, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    slots: ViewerSlots,
    holder: Holder,
}

impl Default for ViewerSlots {
    fn default() -> Self {
        ViewerSlots::new(MAX_VIEWERS, ADMIN_RESERVE, PER_LINK)
    }
}

impl ViewerSlots {
    /// `total` slots, the last `admin_reserve` of them the admin's, at most `per_link` for one
    /// share link.
    pub fn new(total: usize, admin_reserve: usize, per_link: usize) -> ViewerSlots {
        ViewerSlots {
            inner: Arc::new(Inner {
                total,
                admin_reserve: admin_reserve.min(total),
                per_link,
                used: Mutex::new(Used::default()),
            }),
        }
    }

    fn used(&self) -> std::sync::MutexGuard<'_, Used> {
        self.inner
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for `holder`, or `None` when its share (or the whole) is taken.
    pub fn take(&self, holder: Holder) -> Option<Slot> {
        let mut used = self.used();
        let room = match &holder {
            Holder::Admin => used.all < self.inner.total,
            Holder::Link(id) => {
                used.all < self.inner.total - self.inner.admin_reserve
                    && used.by_link.get(id).copied().unwrap_or(0) < self.inner.per_link
            }
        };
        if !room {
            return None;
        }
        used.all += 1;
        if let Holder::Link(id) = &holder {
            *used.by_link.entry(id.clone()).or_insert(0) += 1;
        }
        drop(used);
        Some(Slot {
            slots: self.clone(),
            holder,
        })
    }

    /// Slots held now.
    pub fn in_use(&self) -> usize {
        self.used().all
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut used = self.slots.used();
        used.all = used.all.saturating_sub(1);
        if let Holder::Link(id) = &self.holder
            && let Some(n) = used.by_link.get_mut(id)
        {
            *n -= 1;
            if *n == 0 {
                used.by_link.remove(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(id: &str) -> Holder {
        Holder::Link(id.into())
    }

    /// One link cannot take every slot, links together cannot take the admin's reserve, and a
    /// slot given back can be taken again.
    #[test]
    fn each_link_has_a_share_and_the_admin_a_reserve() {
        let slots = ViewerSlots::new(6, 2, 3);
        let a: Vec<Slot> = (0..3).filter_map(|_| slots.take(link("a"))).collect();
        assert_eq!(a.len(), 3);
        assert!(slots.take(link("a")).is_none(), "link a used its share");
        let b = slots.take(link("b")).expect("b has its own share");
        assert!(slots.take(link("c")).is_none(), "the rest is the admin's");
        let admin: Vec<Slot> = (0..2).filter_map(|_| slots.take(Holder::Admin)).collect();
        assert_eq!(admin.len(), 2);
        assert!(
            slots.take(Holder::Admin).is_none(),
            "all {} taken",
            slots.in_use()
        );
        drop(b);
        assert!(slots.take(link("a")).is_none(), "a still holds its share");
        assert!(
            slots.take(link("c")).is_none(),
            "a's 3 and the admin's 2 fill the 4 slots links may use"
        );
        drop(admin);
        let c = slots.take(link("c")).expect("room once the admin left");
        assert_eq!(slots.in_use(), 4);
        drop((a, c));
        assert_eq!(slots.in_use(), 0, "every slot given back");
    }
}
