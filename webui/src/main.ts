// Entry point: styles, theme, then the app.
import './app.css';
import 'highlight.js/styles/github.css';
import 'katex/dist/katex.min.css';
import { mount } from 'svelte';
import App from './App.svelte';
import { applyTheme, settings } from './lib/settings.svelte';

applyTheme(settings.theme);
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(settings.theme));
mount(App, { target: document.getElementById('app')! });
