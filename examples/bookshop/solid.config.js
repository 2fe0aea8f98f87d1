// Every `solid` command run in this folder serves the bookshop pack (spec/manifest.md §packs).
import bookshop from './bookshop.js';

export default { packs: [bookshop] };
