//! The `web_sys::WebSocket` glue behind `use_live_feed`: one socket at a time, its event handlers,
//! the reconnect timer and the watchdog. Decisions (delays, URL, messages) come from `feed.rs`.
//!
//! State lives in one `Rc<RefCell<Feed>>` owned by the watchdog interval (page lifetime); socket
//! handlers hold a `Weak` and a generation number, so a replaced socket's late events are ignored.
//! A socket is only ever torn down from a timer, never from inside its own handlers. A close is
//! followed by a session check (`after_close`) before the reconnect is scheduled. The `subscribe`
//! goes out when `hello` arrives (only then is it known whether the server is a hub) and again
//! when what the page wants changes, never twice the same on one socket.

use super::{
    ConnState, FeedEnd, SESSION_CHECK_MS, WATCHDOG_EVERY_MS, Want, Watch, after_close, backoff_ms,
    protocol_mismatch, subscribe_msg, watchdog, ws_url,
};
use crate::access::share_end;
use crate::store::Store;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::access::Role;
use shared::{ClientMsg, ServerMsg};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::Duration;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{CloseEvent, Event, MessageEvent, WebSocket};

/// A socket with its handlers; dropping it detaches them and closes the socket.
struct Socket {
    ws: WebSocket,
    _on_open: Closure<dyn FnMut(Event)>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_close: Closure<dyn FnMut(CloseEvent)>,
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        let _ = self.ws.close();
    }
}

/// Where the feed's results go.
pub(super) struct Signals {
    pub store: Store,
    pub state: RwSignal<ConnState>,
    pub ended: RwSignal<Option<FeedEnd>>,
    /// What to subscribe to (from `hello` and the route).
    pub want: Memo<Want>,
}

/// A handle on the running feed, for [`resubscribe`]; it does not keep the feed alive.
pub(super) struct Handle(Weak<RefCell<Feed>>);

struct Feed {
    store: Store,
    state: RwSignal<ConnState>,
    ended: RwSignal<Option<FeedEnd>>,
    /// Who the page is, for what a lost session means.
    role: Role,
    socket: Option<Socket>,
    /// Bumped for every new socket; handlers of older ones do nothing.
    generation: u64,
    /// Failed attempts since the last successful open.
    attempt: u32,
    open: bool,
    /// Browser time of the last message (or of the open).
    last_rx_ms: f64,
    /// Set when the feed gave up for good (protocol mismatch, the access ended).
    stopped: bool,
    want: Memo<Want>,
    /// This socket's `hello` arrived: subscribing makes sense.
    greeted: bool,
    /// What this socket last subscribed to.
    sent: Option<Want>,
}

type Shared = Rc<RefCell<Feed>>;

fn now_ms() -> f64 {
    js_sys::Date::now()
}

pub(super) fn start(signals: Signals, role: Role) -> Handle {
    let Signals {
        store,
        state,
        ended,
        want,
    } = signals;
    let feed = Rc::new(RefCell::new(Feed {
        store,
        state,
        ended,
        role,
        socket: None,
        generation: 0,
        attempt: 0,
        open: false,
        last_rx_ms: 0.0,
        stopped: false,
        want,
        greeted: false,
        sent: None,
    }));
    let handle = Handle(Rc::downgrade(&feed));
    connect(&feed);
    // The interval owns the feed for the page's lifetime.
    let watched = Rc::clone(&feed);
    let interval = set_interval_with_handle(
        move || watch(&watched),
        Duration::from_millis(u64::from(WATCHDOG_EVERY_MS)),
    );
    if let Err(e) = interval {
        leptos::logging::error!("vramio: no watchdog timer: {e:?}");
        // Keep the feed alive anyway; without a watchdog a half-open socket is not noticed.
        std::mem::forget(feed);
    }
    handle
}

/// Subscribes again if what the page wants changed since this socket's last `subscribe`.
pub(super) fn resubscribe(handle: &Handle) {
    if let Some(feed) = handle.0.upgrade() {
        let ready = {
            let f = feed.borrow();
            f.open && f.greeted && !f.stopped
        };
        if ready {
            subscribe(&feed);
        }
    }
}

/// Sends the `subscribe` for what the page wants now, resuming from the seqs held, unless this
/// socket already asked for exactly that.
fn subscribe(feed: &Shared) {
    let mut f = feed.borrow_mut();
    let want = f.want.get_untracked();
    if f.sent.as_ref() == Some(&want) {
        return;
    }
    let msg = subscribe_msg(&want, &f.store.held_seqs());
    if let Some(s) = &f.socket
        && let Err(e) = s.ws.send_with_str(&msg)
    {
        leptos::logging::error!("vramio: subscribe failed: {e:?}");
    }
    f.sent = Some(want);
}

fn connect(feed: &Shared) {
    let location = window().location();
    let url = ws_url(
        &location.protocol().unwrap_or_default(),
        &location.host().unwrap_or_default(),
    );
    let generation = {
        let mut f = feed.borrow_mut();
        f.socket = None;
        f.open = false;
        f.greeted = false;
        f.sent = None;
        f.generation += 1;
        f.generation
    };
    let ws = match WebSocket::new(&url) {
        Ok(ws) => ws,
        Err(e) => {
            leptos::logging::error!("vramio: cannot open {url}: {e:?}");
            retry(feed);
            return;
        }
    };
    let weak = Rc::downgrade(feed);
    let on_open = {
        let weak = Weak::clone(&weak);
        Closure::<dyn FnMut(Event)>::new(move |_| on_open(&weak, generation))
    };
    let on_message = {
        let weak = Weak::clone(&weak);
        Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            on_message(&weak, generation, e);
        })
    };
    let on_close = Closure::<dyn FnMut(CloseEvent)>::new(move |_| on_close(&weak, generation));
    ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    feed.borrow_mut().socket = Some(Socket {
        ws,
        _on_open: on_open,
        _on_message: on_message,
        _on_close: on_close,
    });
}

/// The feed, if it is alive and `generation` is still its socket.
fn current(weak: &Weak<RefCell<Feed>>, generation: u64) -> Option<Shared> {
    weak.upgrade()
        .filter(|f| f.borrow().generation == generation && !f.borrow().stopped)
}

fn on_open(weak: &Weak<RefCell<Feed>>, generation: u64) {
    let Some(feed) = current(weak, generation) else {
        return;
    };
    let state = {
        let mut f = feed.borrow_mut();
        f.attempt = 0;
        f.open = true;
        f.last_rx_ms = now_ms();
        f.state
    };
    state.set(ConnState::Open);
}

fn on_message(weak: &Weak<RefCell<Feed>>, generation: u64, e: MessageEvent) {
    let Some(feed) = current(weak, generation) else {
        return;
    };
    let store = {
        let mut f = feed.borrow_mut();
        f.last_rx_ms = now_ms();
        f.store
    };
    let Some(text) = e.data().as_string() else {
        store.decode_error("a binary message (the protocol is JSON text)".to_owned());
        return;
    };
    match ServerMsg::from_json(&text) {
        Ok(msg) => {
            if let ServerMsg::Error { code, message } = &msg
                && let Some(end) = share_end(*code)
            {
                end_access(&feed, FeedEnd::Share(end), message.clone());
                return;
            }
            let (hello, mismatch) = match &msg {
                ServerMsg::Hello { protocol, .. } => (true, protocol_mismatch(*protocol)),
                _ => (false, None),
            };
            store.apply(msg, now_ms());
            if let Some(reason) = mismatch {
                give_up(&feed, reason);
            } else if hello {
                feed.borrow_mut().greeted = true;
                subscribe(&feed);
            }
        }
        Err(err) => store.decode_error(err.to_string()),
    }
}

fn on_close(weak: &Weak<RefCell<Feed>>, generation: u64) {
    if let Some(feed) = current(weak, generation) {
        feed.borrow_mut().open = false;
        check_then_retry(&feed, generation);
    }
}

/// Asks `/api/session` whether the credentials still hold: a 401 ends the feed, anything else
/// (or no answer within [`SESSION_CHECK_MS`]) schedules the reconnect. Whichever of the answer
/// and the deadline comes first decides; the other does nothing.
fn check_then_retry(feed: &Shared, generation: u64) {
    let decided = Rc::new(Cell::new(false));
    let weak = Rc::downgrade(feed);
    {
        let decided = Rc::clone(&decided);
        let weak = Weak::clone(&weak);
        spawn_local(async move {
            let status = match crate::api::session().await {
                Ok(_) => Some(200),
                Err(e) => e.status(),
            };
            if decided.replace(true) {
                return;
            }
            let Some(feed) = current(&weak, generation) else {
                return;
            };
            let role = feed.borrow().role;
            match after_close(status, role) {
                Some(end) => end_access(&feed, end, "the credentials no longer work".to_owned()),
                None => retry(&feed),
            }
        });
    }
    set_timeout(
        move || {
            if !decided.replace(true)
                && let Some(feed) = current(&weak, generation)
            {
                retry(&feed);
            }
        },
        Duration::from_millis(u64::from(SESSION_CHECK_MS)),
    );
}

/// Stops for good because access ended: the reason goes to the page, the badge says why.
fn end_access(feed: &Shared, end: FeedEnd, reason: String) {
    let ended = feed.borrow().ended;
    ended.set(Some(end));
    give_up(feed, reason);
}

/// Stops for good: the state says why; the socket is closed from a timer, outside its handlers.
fn give_up(feed: &Shared, reason: String) {
    let state = {
        let mut f = feed.borrow_mut();
        f.stopped = true;
        f.open = false;
        f.state
    };
    state.set(ConnState::Closed { reason });
    let weak = Rc::downgrade(feed);
    set_timeout(
        move || {
            if let Some(feed) = weak.upgrade() {
                feed.borrow_mut().socket = None;
            }
        },
        Duration::ZERO,
    );
}

/// Schedules the next attempt after the backoff delay.
fn retry(feed: &Shared) {
    let (attempt, state) = {
        let mut f = feed.borrow_mut();
        f.attempt = f.attempt.saturating_add(1);
        (f.attempt, f.state)
    };
    let in_ms = backoff_ms(attempt);
    state.set(ConnState::Reconnecting { attempt, in_ms });
    let weak = Rc::downgrade(feed);
    set_timeout(
        move || {
            if let Some(feed) = weak.upgrade()
                && !feed.borrow().stopped
            {
                connect(&feed);
            }
        },
        Duration::from_millis(u64::from(in_ms)),
    );
}

/// Pings a quiet connection and replaces one that stopped answering.
fn watch(feed: &Shared) {
    let action = {
        let f = feed.borrow();
        if f.stopped || !f.open {
            return;
        }
        watchdog(now_ms() - f.last_rx_ms)
    };
    match action {
        Watch::Fine => {}
        Watch::Ping => {
            let ping = serde_json::to_string(&ClientMsg::Ping)
                .unwrap_or_else(|_| r#"{"type":"ping"}"#.to_owned());
            if let Some(s) = &feed.borrow().socket {
                let _ = s.ws.send_with_str(&ping);
            }
        }
        Watch::Reconnect => {
            {
                let mut f = feed.borrow_mut();
                f.socket = None;
                f.open = false;
            }
            retry(feed);
        }
    }
}
