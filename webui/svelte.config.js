// Svelte compiler options for the web UI (TypeScript in components is stripped by Svelte 5 itself).
export default {
  compilerOptions: { runes: true },
};
