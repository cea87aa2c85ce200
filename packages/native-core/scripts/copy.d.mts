/** The folder of @nuvec/native-core's native sources (core/, napi/, native_core.gypi). */
export const nativeCoreSources: string;
/** Copies the shared native core into `<backendRoot>/native/native-core/`; returns what it wrote or removed. */
export function copyNativeCore(backendRoot: string): string[];
