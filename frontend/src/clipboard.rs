//! The copy buttons' access to the clipboard: the async Clipboard API where the page has it (secure
//! contexts: https or localhost), and selecting the text for a manual copy where it does not.

use wasm_bindgen::{JsCast, JsValue};

/// Whether `navigator.clipboard` exists (it is absent on plain-http pages other than localhost).
fn clipboard_available(nav: &web_sys::Navigator) -> bool {
    js_sys::Reflect::get(nav, &JsValue::from_str("clipboard"))
        .is_ok_and(|c| !c.is_undefined() && !c.is_null())
}

/// Writes `text` to the clipboard and calls `done(true)` once it is there, `done(false)` when the
/// API is missing or refuses (no permission, page not focused).
pub fn copy_text(text: &str, done: impl FnOnce(bool) + 'static) {
    let Some(nav) = web_sys::window().map(|w| w.navigator()) else {
        done(false);
        return;
    };
    if !clipboard_available(&nav) {
        done(false);
        return;
    }
    let promise = nav.clipboard().write_text(text);
    // Exactly one of the two callbacks runs; a one-shot closure frees itself when it runs, so only
    // the one that never runs stays allocated (a few bytes per click).
    let done = std::rc::Rc::new(std::cell::RefCell::new(Some(done)));
    let on_ok = done.clone();
    let ok = wasm_bindgen::closure::Closure::once_into_js(move |_: JsValue| {
        if let Some(f) = on_ok.borrow_mut().take() {
            f(true);
        }
    });
    let err = wasm_bindgen::closure::Closure::once_into_js(move |_: JsValue| {
        if let Some(f) = done.borrow_mut().take() {
            f(false);
        }
    });
    let then = js_sys::Reflect::get(&promise, &JsValue::from_str("then"))
        .ok()
        .and_then(|t| t.dyn_into::<js_sys::Function>().ok());
    if let Some(then) = then {
        // A failure here means the promise has no usable `then`; nothing else to do.
        let _ = then.call2(&promise, &ok, &err);
    }
}

/// Selects the contents of `el`, so the user can copy them by hand.
pub fn select_contents(el: &web_sys::Node) {
    if let Some(selection) = web_sys::window().and_then(|w| w.get_selection().ok().flatten()) {
        // Selecting can only fail on a detached node; the button still says to copy by hand.
        let _ = selection.select_all_children(el);
    }
}
