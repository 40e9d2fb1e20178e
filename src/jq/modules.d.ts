// Build outputs of scripts/extract-jq-wasm.mjs.
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
declare module "*/jq-glue.js" {
  interface JqEmscriptenModule {
    raw(input: string, program: string, flags: string[]): Promise<string>;
  }
  const factory: (moduleArg: {
    instantiateWasm: (
      imports: WebAssembly.Imports,
      receive: (instance: WebAssembly.Instance) => void,
    ) => object;
    printErr?: (message: string) => void;
  }) => Promise<JqEmscriptenModule>;
  export default factory;
}
