// The part of vitest's API the package's tests use (describe/it with each, runIf, skip; the four hooks;
// expect with vitest's own matchers from @vitest/expect), over node:test. gpu/bundle.mjs bundles the tests
// with `vitest` pointing here, so the GPU machine, which has Node.js but no node_modules, runs the same test
// files with `node --test`. Hooks keep vitest's order: beforeEach from the outermost suite in, afterEach from
// the innermost out; `context.skip(reason)` ends the test as skipped.
import { writeSync } from "node:fs";
import * as nodeTest from "node:test";
import { inspect } from "node:util";
import {
  ChaiStyleAssertions,
  chai,
  JestAsymmetricMatchers,
  JestChaiExpect,
  JestExtend,
} from "@vitest/expect";

chai.use(JestExtend);
chai.use(JestChaiExpect);
chai.use(ChaiStyleAssertions);
chai.use(JestAsymmetricMatchers);

/** vitest's `expect`: chai's with the Jest matchers vitest adds. */
export const expect = (value, message) => chai.expect(value, message);
Object.assign(expect, chai.expect);

const scopes = [{ beforeEach: [], afterEach: [] }];
const SKIPPED = Symbol("skipped");

function runTest(name, body) {
  const chain = [...scopes];
  return async (t) => {
    // Start and outcome written synchronously, so that a test that blocks (a driver call that does not
    // return) is named in the log, with every result before it, although the reporter's own output waits
    // for the event loop.
    writeSync(2, `▷ ${name}\n`);
    const context = {
      skip(reason) {
        t.skip(reason);
        throw SKIPPED;
      },
    };
    let ranBefore = 0;
    try {
      for (const scope of chain) {
        for (const hook of scope.beforeEach) {
          await hook(context);
        }
        ranBefore += 1;
      }
      await body(context);
      writeSync(2, `  ✔ ${name}\n`);
    } catch (error) {
      if (error === SKIPPED) {
        writeSync(2, `  ﹣ ${name} (skipped)\n`);
        return;
      }
      writeSync(2, `  ✖ ${name}: ${String(error?.message ?? error).split("\n")[0]}\n`);
      throw error;
    } finally {
      for (const scope of chain.slice(0, ranBefore).reverse()) {
        for (const hook of scope.afterEach) await hook(context);
      }
    }
  };
}

/** vitest's titles of `each`: %s, %d, %i, %j, %o take the row's values in turn; %% is a percent sign. */
function title(template, args) {
  let next = 0;
  return template.replace(/%[sdijo%]/g, (token) => {
    if (token === "%%") return "%";
    const value = args[next++];
    if (token === "%s") return typeof value === "string" ? value : inspect(value);
    if (token === "%d" || token === "%i") return String(Number(value));
    return inspect(value);
  });
}

function defineTest(skip) {
  const define = (name, body) =>
    skip ? nodeTest.it(name, { skip: true }, () => {}) : nodeTest.it(name, runTest(name, body));
  define.each = (rows) => (template, body) => {
    for (const row of rows) {
      const args = Array.isArray(row) ? row : [row];
      define(title(template, args), (context) => body(...args, context));
    }
  };
  return define;
}

export const it = defineTest(false);
it.skip = defineTest(true);
it.runIf = (condition) => (condition ? it : it.skip);
it.skipIf = (condition) => (condition ? it.skip : it);
export const test = it;

function defineSuite(skip) {
  return (name, body) =>
    skip
      ? nodeTest.describe(name, { skip: true }, () => {})
      : nodeTest.describe(name, () => {
          scopes.push({ beforeEach: [], afterEach: [] });
          try {
            body();
          } finally {
            scopes.pop();
          }
        });
}

export const describe = defineSuite(false);
describe.skip = defineSuite(true);
describe.runIf = (condition) => (condition ? describe : describe.skip);
describe.skipIf = (condition) => (condition ? describe.skip : describe);

export const beforeAll = (hook) => nodeTest.before(hook);
export const afterAll = (hook) => nodeTest.after(hook);
export const beforeEach = (hook) => scopes.at(-1).beforeEach.push(hook);
export const afterEach = (hook) => scopes.at(-1).afterEach.push(hook);
