/** `spec.console.routes` in plugin.yaml (docs/API.md §9): accepted shape, defaults and refusals. */
import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/plugins/manifest.js';

const manifest = (console: string) => `apiVersion: plugin.svc.run/v1alpha1
kind: Plugin
metadata: {name: zoo}
spec:
  version: 1.0.0
${console}`;

describe('spec.console.routes', () => {
  it('is read with the manage permissions derived from the view ones unless given', () => {
    const m = parseManifest(
      manifest(`  console:
    routes:
      - {name: animals, title: Animals, resource: animals, permissions: ["plugin:zoo:view"]}
      - {name: keepers, resource: keepers, permissions: ["plugin:zoo:keepers-view"], managePermissions: ["plugin:zoo:admin"]}`),
      'plugin.yaml',
    );
    expect(m.consoleRoutes).toEqual([
      { name: 'animals', title: 'Animals', resource: 'animals', permissions: ['plugin:zoo:view'], managePermissions: ['plugin:zoo:manage'] },
      { name: 'keepers', title: 'keepers', resource: 'keepers', permissions: ['plugin:zoo:keepers-view'], managePermissions: ['plugin:zoo:admin'] },
    ]);
    expect(parseManifest(manifest(''), 'plugin.yaml').consoleRoutes).toEqual([]);
    // Keys a later console may read are ignored; no permissions means every user who may list the model.
    const lenient = parseManifest(manifest('  console: {routes: [{name: a, resource: as, icon: star}]}'), 'plugin.yaml');
    expect(lenient.consoleRoutes).toEqual([{ name: 'a', title: 'a', resource: 'as', permissions: [], managePermissions: [] }]);
  });

  it.each([
    ['  console: []', /spec.console must be a mapping/],
    ['  console: {pages: []}', /spec.console.pages is not a console field/],
    ['  console: {routes: {}}', /routes must be a list/],
    ['  console: {routes: [{name: Bad_Name, resource: a, permissions: []}]}', /name must be/],
    ['  console: {routes: [{name: users, resource: a, permissions: []}]}', /built-in console route/],
    ['  console: {routes: [{name: a, resource: a, permissions: []}, {name: a, resource: b, permissions: []}]}', /given twice/],
    ['  console: {routes: [{name: a, permissions: []}]}', /resource must name/],
    ['  console: {routes: [{name: a, resource: a, permissions: "x"}]}', /permissions must be a list/],
    ['  console: {routes: [{name: a, resource: a, permissions: [], managePermissions: [1]}]}', /managePermissions must be a list/],
  ])('refuses %s', (text, message) => {
    expect(() => parseManifest(manifest(text), 'plugin.yaml')).toThrow(message);
  });
});
