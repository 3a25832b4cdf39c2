/** Compatibility re-export: the object type lives at the storage port (store/object.ts). */
export * from '../store/object.js';
