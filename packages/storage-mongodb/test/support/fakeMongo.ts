import { find as mingoFind, aggregate as mingoAggregate, Query, updateOne as mingoUpdateOne } from "mingo"
import type { Db } from "mongodb"

// A stand-in for the parts of the driver's `Db` and `Collection` this adapter uses, kept
// in memory and evaluated by mingo (a JavaScript implementation of MongoDB's query,
// update and aggregation languages). No MongoDB server can run on these machines; this
// lets the adapter's real repository code and the documents it builds run end to end in
// tests, and records every call so tests can check what would be sent to the driver.
// Unique indexes (with their partial filters) are enforced like the server does, with
// duplicate-key errors of code 11000. It is a test double, not a database: the real
// server is exercised by the contract suite when MONGODB_URL is set.

type AnyDocument = Record<string, unknown>

/** One call made on a fake collection: the method, the collection and its arguments. */
export interface RecordedCall {
  readonly collection: string
  readonly method: string
  readonly args: ReadonlyArray<unknown>
}

interface IndexSpec {
  readonly name?: string
  readonly key: Record<string, number>
  readonly unique?: boolean
  readonly partialFilterExpression?: AnyDocument
  readonly expireAfterSeconds?: number
}

/** The fake database: `collection(name)` as the driver's `Db`, `calls` recorded. */
export interface FakeDb {
  readonly db: Db
  readonly calls: Array<RecordedCall>
  readonly documents: (collection: string) => Array<AnyDocument>
  readonly indexes: (collection: string) => ReadonlyArray<IndexSpec>
}

class DuplicateKeyError extends Error {
  readonly code = 11000
  constructor(index: string) {
    super(`E11000 duplicate key error index: ${index}`)
  }
}

const clone = <A>(value: A): A => structuredClone(value)

const valueAt = (document: AnyDocument, path: string): unknown =>
  path.split(".").reduce<unknown>((value, key) => (value !== null && typeof value === "object" ? (value as AnyDocument)[key] : undefined), document)

const project = (document: AnyDocument, projection: AnyDocument | undefined): AnyDocument =>
  projection === undefined ? document : (mingoFind([document], {}, projection).all()[0] as AnyDocument)

/** The equality fields of a filter, as an upsert inserts them. */
const equalityFields = (filter: AnyDocument): AnyDocument => {
  const fields: AnyDocument = {}
  for (const [key, value] of Object.entries(filter)) {
    if (key.startsWith("$")) continue
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      if ("$eq" in (value as AnyDocument)) fields[key] = (value as AnyDocument).$eq
    } else fields[key] = value
  }
  return fields
}

class FakeCollection {
  readonly rows: Array<AnyDocument> = []
  readonly specs: Array<IndexSpec> = []
  constructor(
    readonly name: string,
    private readonly record: (call: RecordedCall) => void
  ) {}

  private log(method: string, ...args: ReadonlyArray<unknown>) {
    this.record({ collection: this.name, method, args: clone(args) })
  }

  private matching(filter: AnyDocument): Array<AnyDocument> {
    const query = new Query(filter)
    return this.rows.filter((row) => query.test(row))
  }

  /** Throws a duplicate-key error when `candidate` (replacing `self`) breaks a unique index. */
  private checkUnique(candidate: AnyDocument, self?: AnyDocument) {
    const indexes: ReadonlyArray<IndexSpec> = [{ name: "_id_", key: { _id: 1 }, unique: true }, ...this.specs.filter((s) => s.unique)]
    for (const spec of indexes) {
      const covered = (row: AnyDocument) =>
        spec.partialFilterExpression === undefined || new Query(spec.partialFilterExpression).test(row)
      if (!covered(candidate)) continue
      const key = JSON.stringify(Object.keys(spec.key).map((path) => valueAt(candidate, path) ?? null))
      for (const row of this.rows) {
        if (row === self || !covered(row)) continue
        if (JSON.stringify(Object.keys(spec.key).map((path) => valueAt(row, path) ?? null)) === key) {
          throw new DuplicateKeyError(spec.name ?? "index")
        }
      }
    }
  }

  private insert(document: AnyDocument) {
    const stored = clone(document)
    this.checkUnique(stored)
    this.rows.push(stored)
  }

  /**
   * Applies `update` to `row` in place (unique indexes checked); whether anything changed.
   * `filter` is the query that matched the row: the positional operator `$` of an update
   * names the array element it matched, as with the driver.
   */
  private apply(row: AnyDocument, update: AnyDocument | Array<AnyDocument>, inserting: boolean, filter: AnyDocument = {}): boolean {
    let modifier: AnyDocument | Array<AnyDocument> = update
    if (!Array.isArray(update) && "$setOnInsert" in update) {
      const { $setOnInsert, ...rest } = update
      modifier = inserting ? { ...rest, $set: { ...(rest.$set as AnyDocument | undefined), ...($setOnInsert as AnyDocument) } } : rest
    }
    const before = JSON.stringify(row)
    const copy = [clone(row)]
    mingoUpdateOne(copy, filter as never, modifier as never, { cloneMode: "deep" })
    const next = copy[0]!
    if (JSON.stringify(next) === before) return false
    if (next._id !== row._id) throw Object.assign(new Error("Performing an update on the path '_id' would modify the immutable field '_id'"), { code: 66 })
    this.checkUnique(next, row)
    for (const key of Object.keys(row)) delete row[key]
    Object.assign(row, next)
    return true
  }

  async createIndexes(specs: Array<IndexSpec>) {
    this.log("createIndexes", specs)
    for (const spec of specs) if (!this.specs.some((s) => s.name === spec.name)) this.specs.push(spec)
    return specs.map((s) => s.name)
  }

  async indexes() {
    this.log("indexes")
    return [{ name: "_id_", key: { _id: 1 } }, ...this.specs.map((spec) => ({ ...spec }))]
  }

  async dropIndex(name: string) {
    this.log("dropIndex", name)
    const index = this.specs.findIndex((spec) => spec.name === name)
    if (index < 0) throw Object.assign(new Error(`index not found with name [${name}]`), { code: 27 })
    this.specs.splice(index, 1)
    return { ok: 1 }
  }

  async insertOne(document: AnyDocument) {
    this.log("insertOne", document)
    this.insert(document)
    return { acknowledged: true, insertedId: document._id }
  }

  async insertMany(documents: Array<AnyDocument>, options?: { ordered?: boolean }) {
    this.log("insertMany", documents, options)
    const writeErrors: Array<{ code: number; index: number }> = []
    documents.forEach((document, index) => {
      if (options?.ordered !== false && writeErrors.length > 0) return
      try {
        this.insert(document)
      } catch (error) {
        writeErrors.push({ code: (error as { code: number }).code, index })
      }
    })
    if (writeErrors.length > 0) throw Object.assign(new Error("bulk write failed"), { code: 11000, writeErrors })
    return { acknowledged: true, insertedCount: documents.length }
  }

  find(filter: AnyDocument, options: { sort?: AnyDocument; skip?: number; limit?: number; projection?: AnyDocument } = {}) {
    this.log("find", filter, options)
    let cursor = mingoFind(this.matching(filter), {})
    if (options.sort !== undefined) cursor = cursor.sort(options.sort)
    if (options.skip !== undefined) cursor = cursor.skip(options.skip)
    if (options.limit !== undefined && options.limit > 0) cursor = cursor.limit(options.limit)
    const rows = (cursor.all() as Array<AnyDocument>).map((row) => project(clone(row), options.projection))
    return {
      toArray: async () => rows,
      [Symbol.asyncIterator]: async function* () {
        yield* rows
      }
    }
  }

  async findOne(filter: AnyDocument, options: { projection?: AnyDocument } = {}) {
    this.log("findOne", filter, options)
    const row = this.matching(filter)[0]
    return row === undefined ? null : project(clone(row), options.projection)
  }

  async countDocuments(filter: AnyDocument, options: { limit?: number } = {}) {
    this.log("countDocuments", filter, options)
    const count = this.matching(filter).length
    return options.limit === undefined ? count : Math.min(count, options.limit)
  }

  private updateOneNow(filter: AnyDocument, update: AnyDocument | Array<AnyDocument>, options: { upsert?: boolean } = {}) {
    const row = this.matching(filter)[0]
    if (row !== undefined) return { matchedCount: 1, modifiedCount: this.apply(row, update, false, filter) ? 1 : 0, upsertedCount: 0, row }
    if (options.upsert !== true) return { matchedCount: 0, modifiedCount: 0, upsertedCount: 0, row: undefined }
    const created: AnyDocument = { ...equalityFields(filter) }
    this.apply(created, update, true)
    this.insert(created)
    return { matchedCount: 0, modifiedCount: 0, upsertedCount: 1, row: this.rows[this.rows.length - 1] }
  }

  async updateOne(filter: AnyDocument, update: AnyDocument | Array<AnyDocument>, options: { upsert?: boolean } = {}) {
    this.log("updateOne", filter, update, options)
    const { row: _, ...result } = this.updateOneNow(filter, update, options)
    return result
  }

  async updateMany(filter: AnyDocument, update: AnyDocument | Array<AnyDocument>) {
    this.log("updateMany", filter, update)
    const rows = this.matching(filter)
    let modifiedCount = 0
    for (const row of rows) if (this.apply(row, update, false)) modifiedCount++
    return { matchedCount: rows.length, modifiedCount }
  }

  async replaceOne(filter: AnyDocument, replacement: AnyDocument) {
    this.log("replaceOne", filter, replacement)
    const row = this.matching(filter)[0]
    if (row === undefined) return { matchedCount: 0, modifiedCount: 0 }
    const next = { ...clone(replacement), _id: row._id }
    this.checkUnique(next, row)
    for (const key of Object.keys(row)) delete row[key]
    Object.assign(row, next)
    return { matchedCount: 1, modifiedCount: 1 }
  }

  async findOneAndUpdate(
    filter: AnyDocument,
    update: AnyDocument | Array<AnyDocument>,
    options: { upsert?: boolean; returnDocument?: "before" | "after"; projection?: AnyDocument; sort?: AnyDocument } = {}
  ) {
    this.log("findOneAndUpdate", filter, update, options)
    // The driver's `sort`: of several matches, the first in that order is updated.
    const matches = this.matching(filter)
    const before = options.sort === undefined ? matches[0] : (mingoFind(matches, {}).sort(options.sort).limit(1).all()[0] as AnyDocument | undefined)
    const snapshot = before === undefined ? undefined : clone(before)
    const { row } = before === undefined ? this.updateOneNow(filter, update, options) : this.updateOneNow({ _id: before._id }, update, options)
    const answer = options.returnDocument === "after" ? row : snapshot
    return answer === undefined ? null : project(clone(answer), options.projection)
  }

  /** The driver's `findOneAndDelete`: the first match in `sort` order (natural order without one) is deleted and returned. */
  async findOneAndDelete(filter: AnyDocument, options: { sort?: AnyDocument; projection?: AnyDocument } = {}) {
    this.log("findOneAndDelete", filter, options)
    const matches = this.matching(filter)
    const row = options.sort === undefined ? matches[0] : (mingoFind(matches, {}).sort(options.sort).limit(1).all()[0] as AnyDocument | undefined)
    if (row === undefined) return null
    this.rows.splice(this.rows.indexOf(row), 1)
    return project(clone(row), options.projection)
  }

  async deleteOne(filter: AnyDocument) {
    this.log("deleteOne", filter)
    const row = this.matching(filter)[0]
    if (row !== undefined) this.rows.splice(this.rows.indexOf(row), 1)
    return { deletedCount: row === undefined ? 0 : 1 }
  }

  async deleteMany(filter: AnyDocument) {
    this.log("deleteMany", filter)
    const rows = this.matching(filter)
    for (const row of rows) this.rows.splice(this.rows.indexOf(row), 1)
    return { deletedCount: rows.length }
  }

  async bulkWrite(operations: Array<AnyDocument>, options?: { ordered?: boolean }) {
    this.log("bulkWrite", operations, options)
    let matchedCount = 0
    let modifiedCount = 0
    let deletedCount = 0
    for (const operation of operations) {
      if ("updateOne" in operation) {
        const { filter, update, upsert } = operation.updateOne as { filter: AnyDocument; update: AnyDocument; upsert?: boolean }
        const result = this.updateOneNow(filter, update, { upsert: upsert === true })
        matchedCount += result.matchedCount
        modifiedCount += result.modifiedCount
      } else if ("deleteOne" in operation) {
        const { filter } = operation.deleteOne as { filter: AnyDocument }
        const row = this.matching(filter)[0]
        if (row !== undefined) {
          this.rows.splice(this.rows.indexOf(row), 1)
          deletedCount++
        }
      } else throw new Error(`fake bulkWrite: unsupported operation ${Object.keys(operation).join()}`)
    }
    return { matchedCount, modifiedCount, deletedCount }
  }

  aggregate(pipeline: Array<AnyDocument>) {
    this.log("aggregate", pipeline)
    const rows = mingoAggregate(clone(this.rows), pipeline) as Array<AnyDocument>
    return { toArray: async () => rows }
  }
}

/** A fresh, empty fake database. */
export const makeFakeDb = (): FakeDb => {
  const calls: Array<RecordedCall> = []
  const collections = new Map<string, FakeCollection>()
  const collection = (name: string) => {
    let found = collections.get(name)
    if (found === undefined) {
      found = new FakeCollection(name, (call) => calls.push(call))
      collections.set(name, found)
    }
    return found
  }
  return {
    db: { collection } as unknown as Db,
    calls,
    documents: (name) => collection(name).rows,
    indexes: (name) => collection(name).specs
  }
}
