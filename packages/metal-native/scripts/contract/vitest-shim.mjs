// Stands in for the few vitest functions the contract suite (@nuvec/native-core's test/contract.ts, test/contract-host.test.ts)
// uses, over node:test and vitest's own `expect` (@vitest/expect over chai), so that the suite bundles into
// one plain file that any Node.js runs: under qemu for arm64 there is no vitest (it needs esbuild's native
// binary for the host). scripts/run-contract.mjs bundles it with `vitest` aliased to this file.
import {
  after,
  before,
  afterEach as nodeAfterEach,
  beforeEach as nodeBeforeEach,
  describe as nodeDescribe,
  it as nodeIt,
} from "node:test";
import {
  chai,
  GLOBAL_EXPECT,
  getState,
  JestAsymmetricMatchers,
  JestChaiExpect,
  JestExtend,
  setState,
} from "@vitest/expect";

chai.use(JestExtend);
chai.use(JestChaiExpect);
chai.use(JestAsymmetricMatchers);

/** vitest's `expect` (the same matchers, made the way vitest makes it). */
export const expect = (value, message) => {
  const { assertionCalls } = getState(expect);
  setState({ assertionCalls: assertionCalls + 1 }, expect);
  return chai.expect(value, message);
};
Object.assign(expect, chai.expect);
expect.getState = () => getState(expect);
expect.setState = (state) => setState(state, expect);
expect.extend = (matchers) => chai.expect.extend(expect, matchers);
setState({ assertionCalls: 0, isExpectingAssertions: false, expectedAssertionsNumber: null }, expect);
globalThis[GLOBAL_EXPECT] = expect;

// vitest's context.skip(note) ends the test there; node's t.skip() only marks it, so it is thrown past.
const skipped = Symbol("skipped");
function withContext(body) {
  return async (t) => {
    const context = {
      skip(note) {
        t.skip(note);
        throw skipped;
      },
    };
    try {
      await body(context);
    } catch (error) {
      if (error !== skipped) throw error;
    }
  };
}

/** vitest's printf-like names of `it.each`: %s, %d, %i, %j, %o in order. */
function title(template, values) {
  let index = 0;
  return template.replace(/%[sdijo]/g, () => String(values[index++]));
}

export function describe(name, body) {
  nodeDescribe(name, body);
}
describe.skip = (name, body) => nodeDescribe(name, { skip: true }, body);
describe.runIf = (condition) =>
  condition ? describe : (name, body) => nodeDescribe(name, { skip: "not run on this backend" }, body);
describe.skipIf = (condition) => describe.runIf(!condition);

export function it(name, body) {
  nodeIt(name, withContext(body));
}
it.skip = (name, body) => nodeIt(name, { skip: true }, withContext(body));
/** A test the contract does not run on this backend (as vitest's `it.runIf(false)`, `.each` included). */
function notRunHere(name, body) {
  nodeIt(name, { skip: "not run on this backend" }, withContext(body));
}
notRunHere.each = (rows) => (name, body) => {
  for (const row of rows) {
    const values = Array.isArray(row) ? row : [row];
    notRunHere(title(name, values), () => body(...values));
  }
};
it.runIf = (condition) => (condition ? it : notRunHere);
it.skipIf = (condition) => it.runIf(!condition);
it.each = (rows) => (name, body) => {
  for (const row of rows) {
    const values = Array.isArray(row) ? row : [row];
    nodeIt(
      title(name, values),
      withContext(() => body(...values)),
    );
  }
};

export const beforeAll = before;
export const afterAll = after;
export const beforeEach = nodeBeforeEach;
export const afterEach = nodeAfterEach;
