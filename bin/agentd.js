#!/usr/bin/env node
// agentd's command. The shipped server is the bundled JavaScript in dist/bundle/ (`npm run build`,
// run by `npm ci`): loading TypeScript through a transpiler at every start would cost seconds, and
// loading tsc's hundreds of modules one by one costs a third of a second and 13 MB
// (scripts/bundle.mjs).
//
// This file is read by whatever `node` a terminal finds first, often an older one than agentd
// needs, so it stays old-fashioned JavaScript (no static import, no `?.`, no top-level await) that
// any Node with ES modules parses, and checks the version before it loads anything else. On an
// older Node it hands over to the Node 24 that scripts/ensure-node.sh installs, when it is there;
// otherwise it says what is needed, with exit status 2.
var NEEDED_MAJOR = 24;
var major = Number(process.versions.node.split('.')[0]);

if (major >= NEEDED_MAJOR) {
  start();
} else {
  handOver();
}

function start() {
  Promise.all([import('node:module'), import('./compile-cache.js')])
    .then(function (modules) {
      // V8's code for the bundle, kept from one start to the next (docs/BENCHMARKS.md, "Start-up on Node 24")
      modules[0].enableCompileCache(modules[1].compileCacheDirectory());
      return import('../dist/bundle/agentd.js').catch(function (error) {
        if (!error || error.code !== 'ERR_MODULE_NOT_FOUND' || String(error.message).indexOf('dist/bundle/agentd.js') < 0) throw error;
        console.error('agentd: dist/ is missing; run `npm run build` (npm ci does it for you)');
        process.exit(1);
      });
    })
    .then(function (bundle) {
      return bundle.main(process.argv.slice(2));
    })
    .catch(function (error) {
      console.error(error);
      process.exit(1);
    });
}

/** Runs this file again on the Node that scripts/ensure-node.sh installed, or explains. */
function handOver() {
  Promise.all([import('node:fs'), import('node:path'), import('node:os'), import('node:child_process')]).then(function (modules) {
    var fs = modules[0];
    var path = modules[1];
    var os = modules[2];
    var childProcess = modules[3];
    var cacheHome = process.env.XDG_CACHE_HOME && path.isAbsolute(process.env.XDG_CACHE_HOME) ? process.env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache');
    var nodeHome = process.env.AGENTD_NODE_HOME || path.join(cacheHome, 'agentd', 'node-' + NEEDED_MAJOR);
    var node = path.join(nodeHome, 'bin', 'node');
    // a loop guard: the Node found there must not be handed over to again
    if (!fs.existsSync(node) || process.env.AGENTD_HANDED_OVER) {
      process.stderr.write('agentd needs Node ' + NEEDED_MAJOR + ' (found v' + process.versions.node + '); see README (Quick start: scripts/ensure-node.sh installs it)\n');
      process.exit(2);
    }
    var env = Object.assign({}, process.env, { AGENTD_HANDED_OVER: '1' });
    var child = childProcess.spawn(node, process.argv.slice(1), { stdio: 'inherit', env: env });
    // the terminal's Ctrl-C reaches the child too (same process group); a TERM sent here is passed on
    ['SIGINT', 'SIGTERM', 'SIGHUP'].forEach(function (signal) {
      process.on(signal, function () {
        if (signal !== 'SIGINT') child.kill(signal);
      });
    });
    child.on('error', function (error) {
      process.stderr.write('agentd: could not run ' + node + ': ' + error.message + '\n');
      process.exit(2);
    });
    child.on('exit', function (code, signal) {
      process.exit(code === null ? 128 + (os.constants.signals[signal] || 1) : code);
    });
  });
}
