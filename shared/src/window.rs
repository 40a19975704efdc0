//! `Ring`: a fixed-capacity FIFO that drops the oldest item when full.
//!
//! The hub keeps its frame history in one (backfill, resume); the frontend store keeps one per chart
//! series. Capacity is fixed at construction, so memory is bounded whatever the uptime.

use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Ring<T> {
    items: VecDeque<T>,
    capacity: usize,
}

impl<T> Ring<T> {
    /// A ring holding at most `capacity` items (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Ring {
            items: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// Appends `item`, returning the oldest item if it had to make room.
    pub fn push(&mut self, item: T) -> Option<T> {
        let evicted = if self.items.len() == self.capacity {
            self.items.pop_front()
        } else {
            None
        };
        self.items.push_back(item);
        evicted
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    pub fn clear(&mut self) {
        self.items.clear();
    }
    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        self.items.iter()
    }
    pub fn last(&self) -> Option<&T> {
        self.items.back()
    }
    pub fn first(&self) -> Option<&T> {
        self.items.front()
    }
    /// The items after the first one for which `is_before` is false, found by binary search.
    /// `is_before` must be true for a prefix of the ring and false after it (sorted data).
    pub fn after(&self, is_before: impl Fn(&T) -> bool) -> impl Iterator<Item = &T> {
        let start = self.items.partition_point(is_before);
        self.items.range(start..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_when_full() {
        let mut r = Ring::new(3);
        assert_eq!(r.push(1), None);
        assert_eq!(r.push(2), None);
        assert_eq!(r.push(3), None);
        assert_eq!(r.push(4), Some(1));
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(r.len(), 3);
        assert_eq!(r.first(), Some(&2));
        assert_eq!(r.last(), Some(&4));
    }

    #[test]
    fn zero_capacity_means_one() {
        let mut r = Ring::new(0);
        r.push('a');
        r.push('b');
        assert_eq!(r.iter().collect::<String>(), "b");
        assert_eq!(r.capacity(), 1);
    }

    #[test]
    fn after_finds_the_suffix() {
        let mut r = Ring::new(10);
        for seq in 1..=10u64 {
            r.push(seq);
        }
        r.push(11);
        let tail: Vec<u64> = r.after(|s| *s <= 7).copied().collect();
        assert_eq!(tail, vec![8, 9, 10, 11]);
        assert_eq!(r.after(|s| *s <= 100).count(), 0);
        assert_eq!(r.after(|_| false).count(), 10);
    }
}
