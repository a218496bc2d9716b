// After bundle.mjs: what the bundles carry, declared for a user's tools (CONTRACT.md §23, issue 44).
// esbuild's metafiles name every source file each output holds; each file under node_modules
// belongs to one installed package (the innermost node_modules/<name> of its path). From those:
//
// - dist/bundle/sbom.cdx.json: a CycloneDX 1.5 SBOM, agentd as the component and every bundled
//   package (name, version, package URL, declared licence, the lock's integrity hash) as a library,
//   plus the packages that stay in node_modules at run time (better-sqlite3, pg) when installed;
// - dist/bundle/THIRD-PARTY-NOTICES.txt: each bundled package's licence and its own LICENSE and
//   NOTICE files, as the MIT, BSD and Apache licences ask of a redistribution.
//
// No timestamp or serial number: the same checkout builds the same files. Both ship in the npm
// package ("files") and the image (deploy/assemble.sh copies the package's files).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const bundleDirectory = new URL('dist/bundle/', root);
const metafiles = [new URL('meta.json', bundleDirectory), new URL('dist/client/meta.json', root)];
/** packages bundle.mjs keeps external: loaded from node_modules at run time */
const RUNTIME_EXTERNALS = ['better-sqlite3', 'pg'];
/** packages whose files bundle.mjs copies into dist/bundle/ (not in the metafiles) */
const COPIED_PACKAGES = ['tree-sitter-bash'];

const agentd = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8'));

/** `node_modules/a/node_modules/@s/b/lib/x.js` → `node_modules/a/node_modules/@s/b` */
function packageDirectoryOf(input) {
  const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  return match ? match[1] : null;
}

function bundledPackageDirectories() {
  const directories = new Set();
  for (const metafile of metafiles) {
    const { inputs } = JSON.parse(readFileSync(metafile, 'utf8'));
    for (const input of Object.keys(inputs)) {
      const directory = packageDirectoryOf(input);
      if (directory) directories.add(directory);
    }
  }
  return directories;
}

function describePackage(directory, bundled) {
  const manifest = JSON.parse(readFileSync(new URL(`${directory}/package.json`, root), 'utf8'));
  const declared = typeof manifest.license === 'string' ? manifest.license
    : Array.isArray(manifest.licenses) ? manifest.licenses.map((entry) => entry.type ?? entry).join(' OR ')
      : manifest.license?.type ?? 'NOASSERTION';
  return { directory, name: manifest.name, version: manifest.version, license: declared, integrity: lock.packages[directory]?.integrity, bundled };
}

function purlOf({ name, version }) {
  return `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;
}

function componentOf(pkg) {
  const [group, name] = pkg.name.startsWith('@') ? pkg.name.split('/') : [undefined, pkg.name];
  const [algorithm, digest] = pkg.integrity?.split('-') ?? [];
  const hashes = algorithm === 'sha512' ? [{ alg: 'SHA-512', content: Buffer.from(digest, 'base64').toString('hex') }] : undefined;
  return {
    type: 'library',
    'bom-ref': purlOf(pkg),
    ...(group ? { group } : {}),
    name,
    version: pkg.version,
    scope: 'required',
    licenses: [{ expression: pkg.license }],
    purl: purlOf(pkg),
    ...(hashes ? { hashes } : {}),
    properties: [{ name: 'agentd:delivery', value: pkg.bundled ? 'bundled into dist/bundle' : 'node_modules' }],
  };
}

const LICENCE_FILE = /^(licen[cs]e|copying|notice)([.-].*)?$/i;

function noticeOf(pkg) {
  const directory = new URL(`${pkg.directory}/`, root);
  const files = readdirSync(directory).filter((file) => LICENCE_FILE.test(file)).sort();
  const texts = files.map((file) => `--- ${file}\n\n${readFileSync(new URL(file, directory), 'utf8').trim()}\n`);
  const heading = `${pkg.name}@${pkg.version} (${pkg.license})`;
  return `${'='.repeat(78)}\n${heading}\n\n${texts.length ? texts.join('\n') : 'The package holds no licence file; its package.json declares the licence above.\n'}`;
}

const packages = [...bundledPackageDirectories()].map((directory) => describePackage(directory, true));
// files bundle.mjs copies beside the bundles rather than bundling (the bash grammar's WebAssembly)
for (const name of COPIED_PACKAGES) packages.push(describePackage(`node_modules/${name}`, true));
for (const name of RUNTIME_EXTERNALS) {
  if (existsSync(new URL(`node_modules/${name}/package.json`, root))) packages.push(describePackage(`node_modules/${name}`, false));
}
packages.sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
const unique = packages.filter((pkg, index) => index === 0 || purlOf(pkg) !== purlOf(packages[index - 1]));

const sbom = {
  bomFormat: 'CycloneDX',
  specVersion: '1.5',
  version: 1,
  metadata: {
    tools: { components: [{ type: 'application', name: 'scripts/bill-of-materials.mjs', description: 'from esbuild\'s metafile of agentd\'s bundles' }] },
    component: { type: 'application', 'bom-ref': purlOf(agentd), name: agentd.name, version: agentd.version, purl: purlOf(agentd), description: agentd.description },
  },
  components: unique.map(componentOf),
  dependencies: [{ ref: purlOf(agentd), dependsOn: unique.map(purlOf) }],
};
writeFileSync(new URL('sbom.cdx.json', bundleDirectory), `${JSON.stringify(sbom, null, 2)}\n`);

const notices = [
  `Third-party software in agentd ${agentd.version}`,
  '',
  'agentd\'s bundles (dist/bundle, dist/client) carry the packages below, and the image and the',
  'package install those marked node_modules in dist/bundle/sbom.cdx.json beside them. Each is',
  'listed with the licence its package.json declares and the licence and notice files it ships.',
  '',
  ...unique.map(noticeOf),
].join('\n');
writeFileSync(new URL('THIRD-PARTY-NOTICES.txt', bundleDirectory), notices);
