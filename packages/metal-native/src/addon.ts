/**
 * `@nuvec/metal-native/addon`: for writing a {@link NativeBackend} over a Node-API addon with the same raw
 * interface as this package's (handle classes for buffers, mapped files and residency sets; typed errors
 * with a `code`). The wrappers check every argument and state before native code runs and turn what the
 * addon throws into the family's error kinds; a backend subclasses them for what differs (where memory is,
 * calls of its own). `@nuvec/cuda-native` is built on it.
 *
 * @packageDocumentation
 */

export * from "@nuvec/native-core/addon";
