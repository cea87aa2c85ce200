/**
 * `@nuvec/device/mock`: the pretend device of `@nuvec/metal-native/mock` (a `MockBackend` for
 * `Device.open({ backend })`, with fault injection and call counters), re-exported so that a runtime's tests
 * need only `@nuvec/device` installed. The same classes, not copies: `instanceof` holds across both imports.
 *
 * @packageDocumentation
 */
export * from "@nuvec/metal-native/mock";
