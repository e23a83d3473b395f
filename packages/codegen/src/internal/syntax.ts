/**
 * Reading definitions out of the syntax tree: which calls are whizbang `make` calls, which top-level const a
 * definition is bound to and under which export name, and which static value an expression has.
 */
import type TS from "typescript"
import { ts } from "./compiler.js"

export type Kind = "EventDefinition" | "Perspective" | "Receptor"

const kinds: ReadonlySet<string> = new Set<Kind>(["EventDefinition", "Perspective", "Receptor"])
const isKind = (name: string): name is Kind => kinds.has(name)

const isWhizbangModule = (specifier: string): boolean =>
  specifier === "whizbang" || specifier.startsWith("whizbang/") || specifier.startsWith("@whizbang/")

/** Local names bound to whizbang modules in one file: `Perspective` (named or namespace import) or `Core` (namespace). */
export interface WhizbangImports {
  readonly named: ReadonlyMap<string, Kind>
  readonly namespaces: ReadonlySet<string>
}

export const whizbangImports = (file: TS.SourceFile): WhizbangImports => {
  const named = new Map<string, Kind>()
  const namespaces = new Set<string>()
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue
    const specifier = statement.moduleSpecifier.text
    const bindings = statement.importClause?.namedBindings
    if (!isWhizbangModule(specifier) || statement.importClause?.isTypeOnly === true || bindings === undefined) continue
    if (ts.isNamespaceImport(bindings)) {
      const last = specifier.slice(specifier.lastIndexOf("/") + 1)
      if (isKind(last)) named.set(bindings.name.text, last)
      else namespaces.add(bindings.name.text)
    } else {
      for (const element of bindings.elements) {
        const imported = (element.propertyName ?? element.name).text
        if (!element.isTypeOnly && isKind(imported)) named.set(element.name.text, imported)
      }
    }
  }
  return { named, namespaces }
}

/** `EventDefinition.make(...)`, `Perspective.make(...)`, `Receptor.make(...)`, or `Core.Perspective.make(...)`. */
export const makeCallKind = (call: TS.CallExpression, imports: WhizbangImports): Kind | undefined => {
  const callee = call.expression
  if (!ts.isPropertyAccessExpression(callee) || callee.name.text !== "make") return undefined
  const target = callee.expression
  if (ts.isIdentifier(target)) return imports.named.get(target.text)
  if (
    ts.isPropertyAccessExpression(target) &&
    ts.isIdentifier(target.expression) &&
    imports.namespaces.has(target.expression.text) &&
    isKind(target.name.text)
  )
    return target.name.text
  return undefined
}

/**
 * The top-level `const` a definition is bound to, looking through wrappers that keep the value importable:
 * parentheses, `as`/`satisfies`, calls taking it as an argument (`Object.freeze(...)`) and method calls on it
 * (`.pipe(...)`). `undefined` when the definition lives inside a function or an expression.
 */
export const topLevelConst = (call: TS.CallExpression): TS.VariableDeclaration | undefined => {
  let node: TS.Node = call
  for (;;) {
    const parent = node.parent
    if (
      ts.isParenthesizedExpression(parent) ||
      ts.isAsExpression(parent) ||
      ts.isSatisfiesExpression(parent) ||
      ts.isNonNullExpression(parent)
    )
      node = parent
    else if (ts.isCallExpression(parent) && parent.arguments.some((a) => a === node)) node = parent
    else if (
      ts.isPropertyAccessExpression(parent) &&
      parent.expression === node &&
      ts.isCallExpression(parent.parent) &&
      parent.parent.expression === parent
    )
      node = parent.parent
    else break
  }
  const declaration = node.parent
  if (!ts.isVariableDeclaration(declaration) || declaration.initializer !== node || !ts.isIdentifier(declaration.name)) {
    return undefined
  }
  const list = declaration.parent
  const isConst = ts.isVariableDeclarationList(list) && (list.flags & ts.NodeFlags.Const) !== 0
  return isConst && ts.isVariableStatement(list.parent) && ts.isSourceFile(list.parent.parent) ? declaration : undefined
}

/** The name a module exports a declaration under (its own name when it is exported as itself). */
export const exportNameOf = (checker: TS.TypeChecker, declaration: TS.VariableDeclaration): string | undefined => {
  const symbol = checker.getSymbolAtLocation(declaration.name)
  const moduleSymbol = checker.getSymbolAtLocation(declaration.getSourceFile())
  if (symbol === undefined || moduleSymbol === undefined) return undefined
  const names = checker
    .getExportsOfModule(moduleSymbol)
    .filter((exported) => dealias(checker, exported) === symbol)
    .map((exported) => exported.name)
    .sort()
  const own = declaration.name.getText()
  return names.includes(own) ? own : names[0]
}

const dealias = (checker: TS.TypeChecker, symbol: TS.Symbol): TS.Symbol =>
  (symbol.flags & ts.SymbolFlags.Alias) !== 0 ? checker.getAliasedSymbol(symbol) : symbol

/** The declaration an identifier or `a.b` refers to, following imports across the scanned files. */
export const declarationOf = (checker: TS.TypeChecker, expression: TS.Expression): TS.Declaration | undefined => {
  const location = ts.isPropertyAccessExpression(expression) ? expression.name : expression
  if (!ts.isIdentifier(location)) return undefined
  const symbol = checker.getSymbolAtLocation(location)
  if (symbol === undefined) return undefined
  const target = dealias(checker, symbol)
  return target.valueDeclaration ?? target.declarations?.[0]
}

const unwrap = (expression: TS.Expression): TS.Expression =>
  ts.isParenthesizedExpression(expression) || ts.isAsExpression(expression) || ts.isSatisfiesExpression(expression)
    ? unwrap(expression.expression)
    : expression

/** The initializer of the `const` an identifier names (`const name = "balance"`), unwrapped; else undefined. */
const constInitializer = (checker: TS.TypeChecker, node: TS.Identifier): TS.Expression | undefined => {
  const declaration = declarationOf(checker, node)
  if (
    declaration !== undefined &&
    ts.isVariableDeclaration(declaration) &&
    declaration.initializer !== undefined &&
    ts.isVariableDeclarationList(declaration.parent) &&
    (declaration.parent.flags & ts.NodeFlags.Const) !== 0
  ) {
    return unwrap(declaration.initializer)
  }
  return undefined
}

/** A string known without running the program: a literal, or a `const` initialised with one. */
export const staticString = (checker: TS.TypeChecker, expression: TS.Expression): string | undefined => {
  const node = unwrap(expression)
  const literal = ts.isIdentifier(node) ? constInitializer(checker, node) : node
  return literal !== undefined && (ts.isStringLiteral(literal) || ts.isNoSubstitutionTemplateLiteral(literal)) ? literal.text : undefined
}

/** A number literal, or a const initialised with one. */
export const staticNumber = (checker: TS.TypeChecker, expression: TS.Expression): number | undefined => {
  const node = unwrap(expression)
  const literal = ts.isIdentifier(node) ? constInitializer(checker, node) : node
  return literal !== undefined && ts.isNumericLiteral(literal) ? Number(literal.text) : undefined
}

/** A named member of an object literal (`name: x`, shorthand `name`, or a method). */
export const property = (object: TS.ObjectLiteralExpression, name: string): TS.ObjectLiteralElementLike | undefined =>
  object.properties.find(
    (member) =>
      !ts.isSpreadAssignment(member) &&
      member.name !== undefined &&
      (ts.isIdentifier(member.name) || ts.isStringLiteral(member.name)) &&
      member.name.text === name
  )

/** The value expression of a property (`x` of `name: x`, the identifier of a shorthand); `undefined` for methods. */
export const valueOf = (member: TS.ObjectLiteralElementLike): TS.Expression | undefined =>
  ts.isPropertyAssignment(member) ? unwrap(member.initializer) : ts.isShorthandPropertyAssignment(member) ? member.name : undefined

/** 1-based line and column of a node's first token. */
export const positionOf = (node: TS.Node): { readonly file: string; readonly line: number; readonly column: number } => {
  const file = node.getSourceFile()
  const { line, character } = file.getLineAndCharacterOfPosition(node.getStart(file))
  return { file: file.fileName, line: line + 1, column: character + 1 }
}

/** A short, one-line excerpt of the source of a node, for messages. */
export const excerpt = (node: TS.Node): string => {
  const text = node.getText().replace(/\s+/g, " ")
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}
