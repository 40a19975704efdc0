// vramio's page bootstrap: loads the wasm-bindgen glue and starts the app (its start fn mounts it).
// The wasm path is explicit: the glue built by xtask has no default module path.
import init from '/vramio.js';
init({ module_or_path: '/vramio_bg.wasm' });
