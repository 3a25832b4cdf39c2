// Preact + htm, served by the gateway from node_modules (no build step).
import { h, render, options, Fragment } from '../vendor/preact.js';
import { useState, useEffect, useRef, useMemo, useCallback } from '../vendor/hooks.js';
import htm from '../vendor/htm.js';

export const html = htm.bind(h);
export { h, render, options, Fragment, useState, useEffect, useRef, useMemo, useCallback };
