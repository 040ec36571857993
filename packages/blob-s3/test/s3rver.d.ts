// s3rver ships no types: the part of its API the tests use.
declare module "s3rver" {
  interface S3rverOptions {
    readonly port?: number
    readonly address?: string
    readonly silent?: boolean
    readonly directory: string
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string; readonly configs: ReadonlyArray<unknown> }>
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<{ address: string; port: number }>
    close(): Promise<void>
  }
}
