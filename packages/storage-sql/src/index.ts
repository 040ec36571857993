export * from "./SqlDialect.js"
export * from "./compile.js"
export * from "./fragment.js"
export * from "./chatList.js"
