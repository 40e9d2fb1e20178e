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
    instantiateWasm: (imports: WebAssembly.Imports, receive: (instance: WebAssembly.Instance) => void) => object;
    printErr?: (message: string) => void;
    /** Heap cap in bytes (patched into the glue's getHeapMax). */
    heapMax?: number;
    /** Called when the heap would have to grow past heapMax. */
    onHeapExhausted?: () => void;
    /** Wraps every run of jq's main (patched into the glue's raw()). */
    guardRun?: (run: () => void) => void;
  }) => Promise<JqEmscriptenModule>;
  export default factory;
}
