/** The tags whose operations the client leaves out. */
export declare const EXCLUDED_TAGS: ReadonlyArray<string>
/** The files generated from `document`. */
export declare const generatedFiles: (document: unknown) => Promise<{ readonly "openapi.ts": string; readonly "operations.ts": string }>
/** The document the client is generated from. */
export declare const apiDocument: () => Promise<unknown>
