// Types of scripts/pnpm.mjs, for the packages' tests that run pnpm.

/** The pnpm version the workspace pins (`packageManager` of the root package.json). */
export declare const pnpmVersion: string;
/** `environment` plus the settings that keep package managers' logs quiet (no update notices). */
export declare function quietEnvironment(environment?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
/** The program and leading arguments that run the pinned pnpm here. */
export declare function pnpmProgram(): [string, string[]];
/** `[program, args]` that run `pnpm <args>` with the pinned pnpm. */
export declare function pnpmArgs(args: string[]): [string, string[]];
/** Runs `pnpm <args>` with the pinned pnpm, synchronously; spawnSync's result. */
export declare function runPnpm(
  args: string[],
  options?: import("node:child_process").SpawnSyncOptions,
): import("node:child_process").SpawnSyncReturns<Buffer | string>;
/** The pinned pnpm with an absolute program, for a child whose PATH holds no pnpm. */
export declare function pnpmExecutable(): [string, string[]];
