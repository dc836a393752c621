// The runtime owns the `{user-data}` folder; host code reaches it through this name.
export { toolhostHome } from "../runtime/user-data.js";
