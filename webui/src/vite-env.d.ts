// Types for what Vite handles at build time (CSS imports, import.meta.env).
/// <reference types="vite/client" />
