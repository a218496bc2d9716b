/**
 * Issue 44, item 4: every package the bundles carry is visible to a user's tools. Read here from
 * esbuild's metafiles on their own (not through scripts/bill-of-materials.mjs), each bundled
 * package must be
 * - in the CycloneDX SBOM the build writes, by package URL, with its licence;
 * - in the third-party notices, with its licence text when the package ships one;
 * - reached from the package's declared dependencies (not dev-only in the lock), so
 *   `npm audit --omit=dev` sees it;
 * and the SBOM and the notices are files of the npm package (the image ships the package's files).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(REPOSITORY, path), 'utf8');

interface BundledPackage { directory: string; name: string; version: string }

function bundledPackages(): BundledPackage[] {
  const directories = new Set<string>();
  for (const metafile of ['dist/bundle/meta.json', 'dist/client/meta.json']) {
    for (const input of Object.keys(JSON.parse(read(metafile)).inputs)) {
      const parts = input.split('/');
      const last = parts.lastIndexOf('node_modules');
      if (last === -1) continue;
      const length = parts[last + 1].startsWith('@') ? 3 : 2;
      directories.add(parts.slice(0, last + length).join('/'));
    }
  }
  return [...directories].map((directory) => ({ directory, ...JSON.parse(read(`${directory}/package.json`)) }));
}

const purl = ({ name, version }: { name: string; version: string }) => `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;

describe('the bill of materials of the bundles', () => {
  const packages = bundledPackages();

  it('finds the packages the server is made of in the metafiles', () => {
    const names = new Set(packages.map((pkg) => pkg.name));
    for (const name of ['fastify', 'pino', 'kysely', 'openai', '@anthropic-ai/sdk', 'prom-client', '@opentelemetry/api', 'eventsource-parser']) assert.ok(names.has(name), name);
  });

  it('lists every bundled package in the CycloneDX SBOM, with its licence', () => {
    const sbom = JSON.parse(read('dist/bundle/sbom.cdx.json'));
    assert.equal(sbom.bomFormat, 'CycloneDX');
    assert.equal(sbom.specVersion, '1.5');
    const manifest = JSON.parse(read('package.json'));
    assert.equal(sbom.metadata.component.purl, purl(manifest));
    const components = new Map<string, any>(sbom.components.map((component: any) => [component.purl, component]));
    for (const pkg of packages) {
      const component = components.get(purl(pkg));
      assert.ok(component, `${pkg.name}@${pkg.version} is in the SBOM`);
      assert.ok(component.licenses?.[0]?.expression, `${pkg.name} has a licence`);
      assert.match(component.hashes?.[0]?.content ?? '', /^[0-9a-f]{128}$/, `${pkg.name} has the lock's SHA-512`);
    }
    assert.deepEqual(sbom.dependencies[0].dependsOn.toSorted(), [...components.keys()].toSorted());
  });

  it('gives every bundled package its notice, with the licence files it ships', () => {
    const notices = read('dist/bundle/THIRD-PARTY-NOTICES.txt');
    for (const pkg of packages) {
      const heading = notices.indexOf(`\n${pkg.name}@${pkg.version} (`);
      assert.ok(heading !== -1, `${pkg.name}@${pkg.version} has a notice`);
      const licenceFile = readdirSync(join(REPOSITORY, pkg.directory)).find((file) => /^licen[cs]e/i.test(file));
      if (licenceFile) assert.ok(notices.slice(heading).split('\n=====')[0].includes(`--- ${licenceFile}`), `${pkg.name}'s ${licenceFile} is quoted`);
    }
  });

  it('reaches every bundled package from the declared dependencies, not as a devDependency', () => {
    const lock = JSON.parse(read('package-lock.json'));
    for (const pkg of packages) {
      const entry = lock.packages[pkg.directory];
      assert.ok(entry, `${pkg.directory} is in the lock`);
      assert.ok(!entry.dev && !entry.devOptional, `${pkg.name} is a production package (npm audit --omit=dev sees it)`);
    }
  });

  it('ships the SBOM and the notices in the npm package', () => {
    const packed = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPOSITORY, encoding: 'utf8' });
    assert.equal(packed.status, 0, packed.stderr);
    const files = JSON.parse(packed.stdout)[0].files.map((file: { path: string }) => file.path);
    assert.ok(files.includes('dist/bundle/sbom.cdx.json'));
    assert.ok(files.includes('dist/bundle/THIRD-PARTY-NOTICES.txt'));
  });
});
