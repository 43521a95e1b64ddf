/**
 * The per-language tables of the syntax-aware merge: which node kinds are order-insensitive
 * sequences, which of their children are elements, each element's identity, and which
 * identities must be unique (a repeated key is a broken merge). The reasons for each entry are
 * in the ADR on the merge's language tables. Pure.
 */
import type { Language, SyntaxNode } from "../Syntax.ts"

/**
 * An order-insensitive sequence: both sides may insert elements at the same place (ours' first,
 * then theirs'). `member` says which children are its elements; `key` gives an element's
 * identity (two insertions with one identity are one element, or a conflict when they differ);
 * `unique` gives the identity that may appear only once (the duplicate check), or `undefined`
 * when a repeat is legitimate (overloads, getter and setter, decorated redefinitions).
 */
export interface Sequence {
  readonly kind: string
  readonly member: (node: SyntaxNode, text: string) => boolean
  readonly key: (node: SyntaxNode, text: string) => string | undefined
  readonly unique: (node: SyntaxNode, text: string) => string | undefined
}

/** The languages' tables: the sequence a node is, given its parent's type. */
export interface LanguageTable {
  readonly sequence: (node: SyntaxNode, parentType: string | undefined) => Sequence | undefined
  /** Node kinds written as left-nested binary nodes whose arms form one list (`a | b | c`). */
  readonly flattened: ReadonlySet<string>
  /** Node kinds that are comments: they may travel with an inserted element. */
  readonly comment: ReadonlySet<string>
  /**
   * Node kinds whose children are an ordered sequence (statements, arguments, array elements):
   * there two sides' changes merge only with an element neither changed between them.
   */
  readonly ordered: ReadonlySet<string>
}

const slice = (node: SyntaxNode, text: string): string => text.slice(node.startIndex, node.endIndex)

const field = (node: SyntaxNode, name: string): SyntaxNode | undefined => {
  const children = node.children
  for (let i = 0; i < children.length; i++) if (node.fieldNameForChild(i) === name) return children[i]
  return undefined
}

const collapsed = (s: string): string => s.replace(/\s+/g, " ").trim()

// A key written as a string literal names the same key as the bare word: `"a"`, `'a'` and `a`.
const keyText = (node: SyntaxNode, text: string): string => {
  const raw = slice(node, text)
  if (node.type === "string" && raw.length >= 2) {
    const q = raw[0]
    if ((q === "\"" || q === "'") && raw[raw.length - 1] === q) return raw.slice(1, -1)
  }
  return raw
}

const has = (kinds: ReadonlyArray<string>) => {
  const set = new Set(kinds)
  return (node: SyntaxNode) => set.has(node.type)
}

// Modifier words before a member's name that make a different member with the same name.
const modifiers = (node: SyntaxNode): string => {
  const words: Array<string> = []
  for (const child of node.children) {
    if (child.type === "static" || child.type === "get" || child.type === "set") words.push(child.type)
    if (child.isNamed && child.type !== "decorator" && child.type !== "accessibility_modifier") break
  }
  return words.join(" ")
}

const nameOf = (node: SyntaxNode, text: string): string | undefined => {
  const name = field(node, "name")
  return name === undefined ? undefined : keyText(name, text)
}

// ---- TypeScript, TSX, JavaScript ----

const scriptDeclarations = [
  "function_declaration",
  "generator_function_declaration",
  "class_declaration",
  "abstract_class_declaration",
  "interface_declaration",
  "type_alias_declaration",
  "enum_declaration"
]

const scriptTopKey = (node: SyntaxNode, text: string): string | undefined => {
  if (node.type === "import_statement") return `import ${collapsed(slice(node, text))}`
  if (node.type === "export_statement") {
    const declaration = field(node, "declaration")
    if (declaration !== undefined) return scriptTopKey(declaration, text)
    if (node.children.some((c) => c.type === "default")) return "export default"
    return `export ${collapsed(slice(node, text))}`
  }
  const name = nameOf(node, text)
  return name === undefined ? undefined : `${node.type} ${name}`
}

const scriptTopMember = (node: SyntaxNode): boolean => {
  if (node.type === "import_statement" || scriptDeclarations.includes(node.type)) return true
  // `export default <expression>` is one value whose place may matter: only declarations and re-exports.
  if (node.type === "export_statement") return !node.children.some((c) => c.type === "default") || field(node, "declaration") !== undefined
  return false
}

const classMembers = [
  "method_definition",
  "public_field_definition",
  "field_definition",
  "method_signature",
  "abstract_method_signature",
  "index_signature",
  "class_static_block"
]

const classMemberKey = (node: SyntaxNode, text: string): string | undefined => {
  const name = nameOf(node, text)
  if (name === undefined) return node.type === "class_static_block" ? undefined : collapsed(slice(node, text))
  const words = modifiers(node)
  return `${words === "" ? "" : `${words} `}${name}`
}

// Overloads (`method_signature` in a class) and index signatures may repeat; fields and
// implemented methods may not (a getter and a setter differ by their modifier).
const classMemberUnique = (node: SyntaxNode, text: string): string | undefined =>
  node.type === "method_definition" || node.type === "public_field_definition" || node.type === "field_definition"
    ? field(node, "name")?.type === "computed_property_name" ? undefined : classMemberKey(node, text)
    : undefined

const objectMember = has(["pair", "shorthand_property_identifier", "method_definition"])

const objectKey = (node: SyntaxNode, text: string): string | undefined => {
  if (node.type === "shorthand_property_identifier") return slice(node, text)
  const name = field(node, node.type === "pair" ? "key" : "name")
  if (name === undefined || name.type === "computed_property_name") return undefined
  const words = node.type === "method_definition" ? modifiers(node) : ""
  return `${words === "" ? "" : `${words} `}${keyText(name, text)}`
}

const interfaceMember = has(["property_signature", "method_signature", "call_signature", "construct_signature", "index_signature"])

const interfaceKey = (node: SyntaxNode, text: string): string | undefined => {
  const name = nameOf(node, text)
  return name === undefined ? collapsed(slice(node, text)) : `${node.type === "method_signature" ? "method " : ""}${name}`
}

// Method signatures may be overloads; a property named twice is an error.
const interfaceUnique = (node: SyntaxNode, text: string): string | undefined =>
  node.type === "property_signature" && field(node, "name")?.type !== "computed_property_name" ? nameOf(node, text) : undefined

const enumMember = has(["property_identifier", "enum_assignment", "string"])

const enumKey = (node: SyntaxNode, text: string): string | undefined =>
  node.type === "enum_assignment" ? nameOf(node, text) : keyText(node, text)

const specifierKey = (node: SyntaxNode, text: string): string | undefined => collapsed(slice(node, text))

const unionKey = (node: SyntaxNode, text: string): string | undefined => collapsed(slice(node, text))

// A test case or suite registered by a call with a literal name (`it("...", ...)`,
// `test(...)`, `describe(...)`): runners key them by name, so their order within a suite is
// not the code's meaning. Its identity is the callee and the name.
const testCallees = new Set(["it", "test", "describe", "suite", "specify"])

const testCallKey = (node: SyntaxNode, text: string): string | undefined => {
  if (node.type !== "expression_statement") return undefined
  const call = node.children[0]
  if (call?.type !== "call_expression") return undefined
  const callee = field(call, "function")
  const args = field(call, "arguments")
  const name = args?.children.find((c) => c.isNamed)
  if (callee === undefined || name === undefined || (name.type !== "string" && name.type !== "template_string")) return undefined
  const calleeText = slice(callee, text)
  const root = calleeText.split(".")[0]!
  return testCallees.has(root) ? `${calleeText} ${slice(name, text)}` : undefined
}

const testCalls: Omit<Sequence, "kind"> = {
  member: (node, text) => testCallKey(node, text) !== undefined,
  key: testCallKey,
  unique: () => undefined
}

const script: LanguageTable = {
  flattened: new Set(["union_type"]),
  comment: new Set(["comment", "html_comment"]),
  ordered: new Set(["program", "statement_block", "arguments", "array", "switch_case", "switch_default"]),
  sequence: (node, parentType) => {
    switch (node.type) {
      case "program":
        return {
          kind: "top-level declarations",
          member: (n, text) => scriptTopMember(n) || testCalls.member(n, text),
          key: (n, text) => testCallKey(n, text) ?? scriptTopKey(n, text),
          unique: () => undefined
        }
      case "statement_block":
        return { kind: "test suite", ...testCalls }
      case "class_body":
        return { kind: "class body", member: has(classMembers), key: classMemberKey, unique: classMemberUnique }
      case "object":
        return { kind: "object", member: objectMember, key: objectKey, unique: objectKey }
      case "interface_body":
      case "object_type":
        return { kind: node.type === "interface_body" ? "interface" : "object type", member: interfaceMember, key: interfaceKey, unique: interfaceUnique }
      case "enum_body":
        return { kind: "enum", member: enumMember, key: enumKey, unique: enumKey }
      case "named_imports":
        return { kind: "import names", member: has(["import_specifier"]), key: specifierKey, unique: () => undefined }
      case "export_clause":
        return parentType === "export_statement"
          ? { kind: "export names", member: has(["export_specifier"]), key: specifierKey, unique: () => undefined }
          : undefined
      case "union_type":
        return { kind: "union", member: (n) => n.isNamed && n.type !== "comment", key: unionKey, unique: () => undefined }
      default:
        return undefined
    }
  }
}

// ---- Python ----

const pythonDefinitionKey = (node: SyntaxNode, text: string): string | undefined => {
  switch (node.type) {
    case "function_definition":
      return `def ${nameOf(node, text) ?? ""}`
    case "class_definition":
      return `class ${nameOf(node, text) ?? ""}`
    case "decorated_definition": {
      const definition = field(node, "definition")
      return definition === undefined ? undefined : pythonDefinitionKey(definition, text)
    }
    case "import_statement":
    case "import_from_statement":
      return `import ${collapsed(slice(node, text))}`
    case "expression_statement": {
      const assignment = node.children[0]
      const left = assignment?.type === "assignment" ? field(assignment, "left") : undefined
      return left?.type === "identifier" ? `= ${slice(left, text)}` : undefined
    }
    default:
      return undefined
  }
}

const pythonTopMember = has(["import_statement", "import_from_statement", "function_definition", "class_definition", "decorated_definition"])

const pythonClassMember = (node: SyntaxNode): boolean =>
  node.type === "function_definition" || node.type === "decorated_definition" ||
  (node.type === "expression_statement" && node.children.length === 1 && node.children[0]?.type === "assignment")

// A decorated redefinition (`@x.setter`, `@overload`) is legitimate; a plain `def` twice or an
// attribute assigned twice in one class body is not what either side wrote.
const pythonClassUnique = (node: SyntaxNode, text: string): string | undefined =>
  node.type === "function_definition" ? pythonDefinitionKey(node, text) : undefined

const dictKey = (node: SyntaxNode, text: string): string | undefined => {
  if (node.type !== "pair") return undefined
  const key = field(node, "key")
  if (key === undefined) return undefined
  if (key.type === "string") {
    // Only plain literals: a prefix (f"", b"") or an escape makes the spelling not the key.
    const raw = slice(key, text)
    const m = /^(["'])([^"'\\{}]*)\1$/.exec(raw)
    return m === null ? undefined : `"${m[2]}"`
  }
  return key.type === "integer" || key.type === "identifier" || key.type === "true" || key.type === "false" || key.type === "none"
    ? slice(key, text)
    : undefined
}

const python: LanguageTable = {
  flattened: new Set(),
  comment: new Set(["comment"]),
  ordered: new Set(["module", "block", "argument_list", "list"]),
  sequence: (node, parentType) => {
    switch (node.type) {
      case "module":
        return { kind: "module", member: pythonTopMember, key: pythonDefinitionKey, unique: () => undefined }
      case "block":
        return parentType === "class_definition"
          ? { kind: "class body", member: pythonClassMember, key: pythonDefinitionKey, unique: pythonClassUnique }
          : undefined
      case "dictionary":
        return { kind: "dict", member: has(["pair"]), key: dictKey, unique: dictKey }
      default:
        return undefined
    }
  }
}

// ---- JSON ----

const jsonKey = (node: SyntaxNode, text: string): string | undefined => {
  const key = field(node, "key")
  return key === undefined ? undefined : slice(key, text)
}

const json: LanguageTable = {
  flattened: new Set(),
  comment: new Set(["comment"]),
  ordered: new Set(["array"]),
  sequence: (node) =>
    node.type === "object" ? { kind: "object", member: has(["pair"]), key: jsonKey, unique: jsonKey } : undefined
}

/** The table of `language`. */
export const tableOf = (language: Language): LanguageTable => {
  switch (language) {
    case "typescript":
    case "tsx":
    case "javascript":
      return script
    case "python":
      return python
    case "json":
      return json
  }
}

/**
 * A node's children as the merge sees them: a left-nested binary node of a flattened kind
 * (`a | b | c` parsed as `(a | b) | c`) gives the arms of the whole chain.
 */
export const childrenOf = (table: LanguageTable, node: SyntaxNode): ReadonlyArray<SyntaxNode> => {
  if (!table.flattened.has(node.type)) return node.children
  // Iteratively: a chain of thousands of arms must not exhaust the stack.
  const tails: Array<ReadonlyArray<SyntaxNode>> = []
  let current = node
  for (;;) {
    const children = current.children
    const first = children[0]
    if (first === undefined || first.type !== node.type) {
      tails.push(children)
      break
    }
    tails.push(children.slice(1))
    current = first
  }
  return tails.reverse().flat()
}

/**
 * The identity of a child in a list being merged, to pair a changed element with its base
 * version inside a changed run: the sequence's key for its elements, else the node kind and
 * its `name` field (a function, class or method), else none.
 */
export const identityOf = (sequence: Sequence | undefined, node: SyntaxNode, text: string): string | undefined => {
  if (sequence !== undefined && sequence.member(node, text)) {
    const key = sequence.key(node, text)
    return key === undefined ? undefined : `${node.type}\u0000${key}`
  }
  const name = field(node, "name")
  return name === undefined ? undefined : `${node.type}\u0000${slice(name, text)}`
}

// Leaf kinds that name a variable, function, class or type (not a property after a dot).
const nameKinds = new Set(["identifier", "shorthand_property_identifier", "shorthand_property_identifier_pattern", "type_identifier"])

const namesIn = (node: SyntaxNode, text: string, into: Set<string>): void => {
  const stack = [node]
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    if (nameKinds.has(n.type)) into.add(slice(n, text))
    else for (const child of n.children) stack.push(child)
  }
}

// The names a statement binds: declared variables, assigned names, a function's or class's name.
const boundIn = (node: SyntaxNode, text: string, into: Set<string>): void => {
  const target = node.type === "expression_statement" || node.type === "export_statement" || node.type === "decorated_definition"
    ? node.children.find((c) => c.isNamed) ?? node
    : node
  if (target.type === "lexical_declaration" || target.type === "variable_declaration") {
    for (const child of target.children) {
      const name = child.type === "variable_declarator" ? field(child, "name") : undefined
      if (name !== undefined) namesIn(name, text, into)
    }
    return
  }
  const left = field(target, "left")
  if (left !== undefined && (target.type === "assignment" || target.type === "assignment_expression" || target.type === "augmented_assignment" || target.type === "augmented_assignment_expression")) {
    if (left.type === "identifier" || left.type === "pattern_list" || left.type === "tuple_pattern" || left.type === "object_pattern" || left.type === "array_pattern") namesIn(left, text, into)
    return
  }
  const name = field(target, "name")
  if (name !== undefined && name.type === "identifier") into.add(slice(name, text))
}

/**
 * Whether one run of statements binds (declares or assigns) a name another mentions. Each run
 * is given in all its versions (base's and the side's).
 */
export const bindsReadBy = (
  binder: ReadonlyArray<{ readonly node: SyntaxNode; readonly text: string }>,
  reader: ReadonlyArray<{ readonly node: SyntaxNode; readonly text: string }>
): boolean => {
  const bound = new Set<string>()
  for (const { node, text } of binder) boundIn(node, text, bound)
  if (bound.size === 0) return false
  const used = new Set<string>()
  for (const { node, text } of reader) namesIn(node, text, used)
  for (const name of bound) if (used.has(name)) return true
  return false
}
