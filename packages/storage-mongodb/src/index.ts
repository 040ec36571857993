/**
 * @switchboard/storage-mongodb: the Storage of @switchboard/core on the official mongodb driver.
 */
export {}
