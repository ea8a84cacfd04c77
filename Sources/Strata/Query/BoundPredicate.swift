import Foundation

/// Reads the values of any object, for following relationships while a predicate or a sort
/// is evaluated: a generation (the store), a context's view, or a context with its pending
/// changes. One evaluator serves them all, so a predicate means the same everywhere.
protocol RowReader {
    /// The object's values, or `nil` if it does not exist here.
    func values(of id: ObjectID) -> [Value]?
}

extension Generation: RowReader {
    func values(of id: ObjectID) -> [Value]? { object(id)?.values }
}

extension ContextView: RowReader {
    func values(of id: ObjectID) -> [Value]? { row(id)?.values }
}

/// A key path resolved against the schema: the relationships to follow, then the property.
struct BoundKeyPath: Hashable {
    struct Step: Hashable {
        /// The entity the step starts from.
        var entity: Int
        /// The property's storage index in that entity.
        var index: Int
        var kind: SchemaLayout.Kind
    }

    var text: String
    var steps: [Step]
    /// The path ends with `@count` (of the last step, a to-many relationship).
    var isCount: Bool
    /// Whether following the path can give several values (it crosses a to-many relationship).
    var isMultiple: Bool

    /// The attribute type of the values the path gives, if they are attribute values.
    var attributeType: AttributeType? {
        if isCount { return .int }
        if case .attribute(let type) = steps.last!.kind { return type }
        return nil
    }

    /// The entity the path's objects belong to, when it ends at a relationship (not `@count`):
    /// a literal compared with it names an object of that entity.
    var relationshipDestination: Int? {
        isCount ? nil : steps.last!.kind.destination
    }

    /// Resolves `text` from `entity`.
    /// - Throws: ``StoreError/Code/invalidQuery`` naming the entity and listing its keys.
    init(_ text: String, from entity: Int, schema: Schema, allowMultiple: Bool = true) throws(StoreError) {
        self.text = text
        var components = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        isCount = components.last == "@count"
        if isCount { components.removeLast() }
        guard !components.isEmpty, !components.contains(where: \.isEmpty) else {
            throw StoreError(.invalidQuery, "\"\(text)\" is not a key path; write keys joined by dots, like album.artist.name", key: text)
        }
        var steps: [Step] = []
        var current = entity
        var multiple = false
        for (position, component) in components.enumerated() {
            let layout = schema.layout.entities[current]
            guard let index = layout.propertyNames.firstIndex(of: component) else {
                throw StoreError(.invalidQuery, "\(layout.name) has no key \"\(component)\" (in \"\(text)\"); its keys are \(layout.propertyNames)",
                                 key: text)
            }
            let kind = layout.kinds[index]
            steps.append(Step(entity: current, index: index, kind: kind))
            let isLast = position == components.count - 1
            switch kind {
            case .attribute:
                guard isLast else {
                    throw StoreError(.invalidQuery, "\"\(text)\": \(layout.name).\(component) is an attribute; only relationships can be followed", key: text)
                }
            case .toOne(let destination):
                current = destination
            case .toMany(let destination):
                if isLast && isCount { break }
                if multiple || !allowMultiple {
                    throw StoreError(.invalidQuery, "\"\(text)\" crosses more than one to-many relationship, or one where a single value is needed (sort keys, @count aside)",
                                     key: text)
                }
                multiple = true
                current = destination
            }
        }
        if isCount, case .toMany = steps.last!.kind {} else if isCount {
            throw StoreError(.invalidQuery, "\"\(text)\": @count applies to a to-many relationship", key: text)
        }
        self.steps = steps
        self.isMultiple = multiple
    }

    /// The storage index of a path that is one key of the object itself (an attribute or a
    /// to-one relationship), read without resolving anything; `nil` for longer paths.
    var ownIndex: Int? { steps.count == 1 && !isCount && !isMultiple ? steps[0].index : nil }

    /// The values the path gives for an object with `values`, reading related objects from `reader`.
    ///
    /// A nil (or missing) to-one relationship gives nil for the rest of the path, one nil
    /// for each object it was reached from: `album.artist.name` is nil for an album without
    /// an artist, and `songs.album.title` has a nil for each song without an album (as
    /// NSPredicate's key-value coding has an `NSNull`). A to-many relationship reached
    /// through nil gives no values.
    func resolve(_ values: [Value], reader: some RowReader) -> [Value] {
        // Each object reached so far; `nil` where a to-one relationship on the way was nil.
        var current: [[Value]?] = [values]
        for (position, step) in steps.enumerated() {
            let isLast = position == steps.count - 1
            if isLast {
                if isCount {
                    return current.map { row in
                        guard let row else { return .null }
                        if case .objects(let ids) = row[step.index] { return .int(Int64(ids.count)) }
                        return .int(0)
                    }
                }
                if case .toMany = step.kind {
                    return current.flatMap { row -> [Value] in
                        guard case .objects(let ids)? = row?[step.index] else { return [] }
                        return ids.map(Value.object)
                    }
                }
                return current.map { $0?[step.index] ?? .null }
            }
            var next: [[Value]?] = []
            for row in current {
                guard let row else {
                    // Past a nil to-one: nil stays nil, and a to-many relationship of nothing is empty.
                    if case .toOne = step.kind { next.append(nil) }
                    continue
                }
                switch row[step.index] {
                case .object(let id): next.append(reader.values(of: id))
                case .objects(let ids): for id in ids { if let target = reader.values(of: id) { next.append(target) } }
                default: if case .toOne = step.kind { next.append(nil) }
                }
            }
            current = next
        }
        return []
    }
}

/// A predicate resolved against one entity of a schema: keys become storage indexes,
/// literals take their keys' types (an ISO-8601 string compared with a date is a date),
/// string modifiers are applied to literals once, regular expressions are compiled once.
struct BoundPredicate: @unchecked Sendable {
    // @unchecked: the compiled regular expressions are immutable after binding, and
    // NSRegularExpression matching is thread-safe.

    indirect enum Node {
        case constant(Bool)
        case and([Node])
        case or([Node])
        case not(Node)
        case comparison(BoundComparison)
    }

    let root: Node
    let entity: Int

    init(_ predicate: ObjectPredicate, entity: Int, schema: Schema) throws(StoreError) {
        self.entity = entity
        root = try Self.bind(predicate, entity: entity, schema: schema)
    }

    /// Whether the predicate reads only the object's own row (no key path follows a
    /// relationship to another object), so that a row's verdict depends on that row alone.
    var readsOwnAttributesOnly: Bool {
        func own(_ node: Node) -> Bool {
            switch node {
            case .constant: true
            case .and(let nodes), .or(let nodes): nodes.allSatisfy(own)
            case .not(let inner): own(inner)
            case .comparison(let comparison):
                [comparison.left, comparison.right].allSatisfy { side in
                    if case .key(let path) = side { path.steps.count == 1 } else { true }
                }
            }
        }
        return own(root)
    }

    private static func bind(_ predicate: ObjectPredicate, entity: Int, schema: Schema) throws(StoreError) -> Node {
        switch predicate {
        case .constant(let value): return .constant(value)
        case .and(let parts):
            var nodes: [Node] = []
            for part in parts { nodes.append(try bind(part, entity: entity, schema: schema)) }
            return .and(nodes)
        case .or(let parts):
            var nodes: [Node] = []
            for part in parts { nodes.append(try bind(part, entity: entity, schema: schema)) }
            return .or(nodes)
        case .not(let inner): return .not(try bind(inner, entity: entity, schema: schema))
        case .comparison(let comparison): return .comparison(try BoundComparison(comparison, entity: entity, schema: schema))
        }
    }

    func evaluate(_ values: [Value], reader: some RowReader) -> Bool {
        Self.evaluate(root, values, reader)
    }

    private static func evaluate(_ node: Node, _ values: [Value], _ reader: some RowReader) -> Bool {
        switch node {
        case .constant(let value): return value
        case .and(let nodes): return nodes.allSatisfy { evaluate($0, values, reader) }
        case .or(let nodes): return nodes.contains { evaluate($0, values, reader) }
        case .not(let inner): return !evaluate(inner, values, reader)
        case .comparison(let comparison): return comparison.evaluate(values, reader: reader)
        }
    }

    /// The top-level comparisons every match must satisfy (for choosing an index).
    var conjuncts: [BoundComparison] {
        switch root {
        case .comparison(let c): [c]
        case .and(let nodes): nodes.compactMap { if case .comparison(let c) = $0 { c } else { nil } }
        default: []
        }
    }
}

/// One comparison, bound.
// A class, not a struct: a predicate is evaluated once per row, and reading a struct this
// size out of the predicate's tree copied it each time (a retain and a release for each of
// its references — the key path's steps, the literal, the source text), a fifth of a scan's
// time in `perf`.
final class BoundComparison {
    enum Side {
        case key(BoundKeyPath)
        case value(Value)
        case list([Value])
    }

    let left: Side
    let op: Comparison.Operator
    let right: Side
    let options: Comparison.Options
    let quantifier: Comparison.Quantifier?
    let regex: NSRegularExpression?
    /// The comparison as written, for error messages.
    let source: Comparison
    /// For the common case — one of the object's own keys against a literal, no string
    /// options — the key's storage index and the literal, read without copying the sides.
    private let ownKey: (index: Int, literal: Value)?

    init(_ comparison: Comparison, entity: Int, schema: Schema) throws(StoreError) {
        source = comparison
        options = comparison.options
        func side(_ operand: Operand) throws(StoreError) -> Side {
            switch operand {
            case .key(let text): .key(try BoundKeyPath(text, from: entity, schema: schema))
            case .value(let value): .value(value)
            case .list(let values): .list(values)
            }
        }
        var left = try side(comparison.left)
        var right = try side(comparison.right)
        // Literals take the type of the key they are compared with.
        let keyType: AttributeType? =
            if case .key(let path) = left { path.attributeType } else if case .key(let path) = right { path.attributeType } else { nil }
        let keyText: String =
            if case .key(let path) = left { path.text } else if case .key(let path) = right { path.text } else { "" }
        let destination: Int? =
            if case .key(let path) = left { path.relationshipDestination } else if case .key(let path) = right { path.relationshipDestination } else { nil }
        func coerce(_ value: Value) throws(StoreError) -> Value {
            if let destination {
                return try Self.objectLiteral(value, destination: schema.entities[destination].name, key: keyText)
            }
            let coerced = try Self.coerce(value, to: keyType, key: keyText)
            // A regular expression keeps its case (the expression compiles case-insensitive
            // instead), but loses its diacritics under [d], as the text it is matched with does.
            return Self.fold(coerced, comparison.op == .matches ? comparison.options.subtracting(.caseInsensitive) : comparison.options)
        }
        func coerceSide(_ side: Side) throws(StoreError) -> Side {
            switch side {
            case .key: return side
            case .value(let value): return .value(try coerce(value))
            case .list(let values):
                var coerced: [Value] = []
                for value in values { coerced.append(try coerce(value)) }
                return .list(coerced)
            }
        }
        left = try coerceSide(left)
        right = try coerceSide(right)
        var op = comparison.op
        var quantifier = comparison.quantifier
        if let destination, [.beginsWith, .endsWith, .contains, .like, .matches].contains(op) {
            // Objects are not text. A to-many relationship CONTAINS an object as NSPredicate's
            // collections do: membership, `ANY key == object`. Anything else could only be
            // false for every object, and is refused rather than matching nothing.
            let name = schema.entities[destination].name
            if op == .contains, quantifier == nil, case .key(let path) = left, case .toMany = path.steps.last!.kind {
                op = .equal
                quantifier = .any
            } else {
                throw StoreError(.invalidQuery, "\(op.rawValue) compares text; \"\(keyText)\" is a relationship to \(name): compare it with == '\(name)/1', "
                                 + "or test a to-many relationship's members with CONTAINS '\(name)/1'", key: keyText)
            }
        }
        self.op = op
        self.quantifier = quantifier
        if comparison.quantifier != nil, case .key(let path) = left, !path.isMultiple {
            throw StoreError(.invalidQuery, "\(comparison.quantifier!.rawValue) needs a key path through a to-many relationship; \"\(path.text)\" gives one value",
                             key: path.text)
        }
        if case .key(let path) = right, path.isMultiple {
            throw StoreError(.invalidQuery, "the right side \"\(path.text)\" gives several values; put the to-many key path on the left", key: path.text)
        }
        switch comparison.op {
        case .between:
            guard case .list(let bounds) = right, bounds.count == 2 else {
                throw StoreError(.invalidQuery, "BETWEEN needs a list of two values, like BETWEEN {1, 10}", key: keyText)
            }
        case .in:
            guard case .list = right else {
                throw StoreError(.invalidQuery, "IN needs a list, like IN {1, 2, 3}", key: keyText)
            }
        default: break
        }
        if comparison.op == .matches {
            guard case .value(.string(let pattern)) = right, case .value(.string(let written)) = comparison.right else {
                throw StoreError(.invalidQuery, "MATCHES needs a regular expression string on the right", key: keyText)
            }
            do {
                // The whole text, as NSPredicate's MATCHES (ICU's `matches`): `\z`, not `$`,
                // which also matches before a line break that ends the text. A quotation the
                // expression leaves open (`\Q` without `\E`, which runs to its end) is closed
                // first, or it would quote the wrapper's end.
                let closed = Self.leavesQuotationOpen(pattern) ? pattern + #"\E"# : pattern
                regex = try Self.wholeTextExpression(closed, options: comparison.options.contains(.caseInsensitive) ? [.caseInsensitive] : [])
            } catch {
                throw StoreError(.invalidQuery, "MATCHES: \"\(written)\" is not a regular expression: \(error)", key: keyText)
            }
        } else {
            regex = nil
        }
        self.left = left
        self.right = right
        if case .key(let path) = left, let index = path.ownIndex, case .value(let literal) = right,
           comparison.options.isEmpty || comparison.op == .matches && comparison.options == [.caseInsensitive] {
            ownKey = (index, literal)
        } else {
            ownKey = nil
        }
    }

    /// `pattern` matching the whole text: `\A(?:pattern)\z`. An expression that ends inside a
    /// free-spacing comment (`(?x)`, then `#` to its end) would swallow the wrapper's end and
    /// fail to parse; the comment is then ended with a line break, which free-spacing mode
    /// ignores. Only when the expression parses alone and the wrapped one does not — which,
    /// with quotations closed first, only such a comment causes — and the result parses.
    static func wholeTextExpression(_ pattern: String, options: NSRegularExpression.Options) throws -> NSRegularExpression {
        do {
            return try NSRegularExpression(pattern: #"\A(?:"# + pattern + #")\z"#, options: options)
        } catch {
            guard (try? NSRegularExpression(pattern: pattern, options: options)) != nil,
                let ended = try? NSRegularExpression(pattern: #"\A(?:"# + pattern + "\n" + #")\z"#, options: options)
            else { throw error }
            return ended
        }
    }

    /// Whether a regular expression ends inside a `\Q` quotation (which runs to the end of
    /// the expression when no `\E` closes it).
    static func leavesQuotationOpen(_ pattern: String) -> Bool {
        let scalars = Array(pattern.unicodeScalars)
        var quoting = false
        var i = 0
        while i + 1 < scalars.count {
            if scalars[i] == "\\" {
                if quoting {
                    // Inside a quotation only `\E` means anything: a backslash before
                    // anything else is itself, and the next may start `\E`.
                    if scalars[i + 1] == "E" {
                        quoting = false
                        i += 1
                    }
                } else {
                    if scalars[i + 1] == "Q" { quoting = true }
                    i += 1  // the escaped character
                }
            }
            i += 1
        }
        return quoting
    }

    /// A literal compared with a relationship: an object ID, written as text like `"Album/3"`
    /// (as the ID prints), of the relationship's destination entity.
    private static func objectLiteral(_ value: Value, destination: String, key: String) throws(StoreError) -> Value {
        switch value {
        case .null, .object: return value
        case .string(let text):
            guard let (entity, number) = ObjectID.parts(of: text) else {
                throw StoreError(.invalidQuery, "\"\(key)\" is a relationship to \(destination); \"\(text)\" is not an object ID like \(destination)/1",
                                 key: key)
            }
            guard entity == destination else {
                throw StoreError(.invalidQuery, "\"\(key)\" is a relationship to \(destination); \(text) is not one of its objects", key: key)
            }
            return .object(ObjectID(entity: destination, number: number))
        default:
            throw StoreError(.invalidQuery, "\"\(key)\" is a relationship to \(destination); compare it with an object ID like \"\(destination)/1\" or nil, not \(value)",
                             key: key)
        }
    }

    /// A literal in the type of the key it is compared with.
    private static func coerce(_ value: Value, to type: AttributeType?, key: String) throws(StoreError) -> Value {
        guard let type else { return value }
        switch (type, value) {
        case (.date, .string(let text)):
            guard let date = ISO8601.date(from: text) else {
                throw StoreError(.invalidQuery, "\"\(key)\" is a date; \"\(text)\" is not an ISO-8601 date like 2020-01-31T00:00:00Z", key: key)
            }
            return .date(date)
        case (.double, .int(let i)):
            // Only where the double is the same number: 2^53 + 1 is no double, and stays an
            // int that compares exactly.
            return Double(exactly: i).map(Value.double) ?? value
        case (.bool, .int(let i)):
            // 1 and 0 are YES and NO, as in NSPredicate; another number would match nothing.
            guard i == 0 || i == 1 else {
                throw StoreError(.invalidQuery, "\"\(key)\" is a bool; compare it with true or false (or 1 and 0), not \(i)", key: key)
            }
            return .bool(i == 1)
        case (.bool, .double(let d)):
            // So are 1.0 and 0.0 (NSNumbers compare by value, SQLite's integers with reals).
            guard d == 0 || d == 1 else {
                throw StoreError(.invalidQuery, "\"\(key)\" is a bool; compare it with true or false (or 1 and 0), not \(d)", key: key)
            }
            return .bool(d == 1)
        case (.int, .bool(let b)): return .int(b ? 1 : 0)
        case (.double, .bool(let b)): return .double(b ? 1 : 0)
        case (.data, .string(let text)):
            // As data prints in a predicate: base64.
            guard let data = Data(base64Encoded: text) else {
                throw StoreError(.invalidQuery, "\"\(key)\" is data; \"\(text)\" is not base64", key: key)
            }
            return .data(data)
        case (.uuid, .string(let text)):
            guard let uuid = UUID(uuidString: text) else {
                throw StoreError(.invalidQuery, "\"\(key)\" is a uuid; \"\(text)\" is not one", key: key)
            }
            return .uuid(uuid)
        default: return value
        }
    }

    /// A string as the modifiers compare it.
    static func fold(_ value: Value, _ options: Comparison.Options) -> Value {
        guard case .string(let text) = value, !options.isEmpty else { return value }
        return .string(fold(text, options))
    }

    static func fold(_ text: String, _ options: Comparison.Options) -> String {
        var result = text
        if options.contains(.diacriticInsensitive) { result = result.folding(options: .diacriticInsensitive, locale: nil) }
        if options.contains(.caseInsensitive) { result = result.lowercased() }
        return result
    }

    /// The string options applied to a key's values: MATCHES compares the text as stored
    /// (its expression handles [c]).
    private var keyFolding: Comparison.Options { op == .matches ? options.subtracting(.caseInsensitive) : options }

    private func values(_ side: Side, _ row: [Value], _ reader: some RowReader) -> [Value] {
        switch side {
        case .key(let path):
            return path.resolve(row, reader: reader).map { Self.fold($0, keyFolding) }
        case .value(let value): return [value]
        case .list: return []
        }
    }

    func evaluate(_ row: [Value], reader: some RowReader) -> Bool {
        if let ownKey { return compare(row[ownKey.index], ownKey.literal) }
        // One of the object's own keys against a constant, with string options: no arrays.
        if case .key(let path) = left, let index = path.ownIndex {
            switch right {
            case .value(let value): return compare(Self.fold(row[index], keyFolding), value)
            case .list: return compare(Self.fold(row[index], keyFolding), nil)
            case .key: break
            }
        }
        let lefts = values(left, row, reader)
        let rightValue: Value? = {
            switch right {
            case .key: values(right, row, reader).first ?? .null
            case .value(let v): v
            case .list: nil
            }
        }()
        func one(_ l: Value) -> Bool { compare(l, rightValue) }
        if case .key(let path) = left, path.isMultiple {
            switch quantifier ?? .any {
            case .any: return lefts.contains(where: one)
            case .all: return lefts.allSatisfy(one)
            case .none: return !lefts.contains(where: one)
            }
        }
        return one(lefts.first ?? .null)
    }

    private func compare(_ l: Value, _ r: Value?) -> Bool {
        switch op {
        case .equal: return Self.equal(l, r ?? .null)
        case .notEqual: return !Self.equal(l, r ?? .null)
        case .lessThan: return order(l, r) == .orderedAscending
        case .lessThanOrEqual: return order(l, r).map { $0 != .orderedDescending } ?? false
        case .greaterThan: return order(l, r) == .orderedDescending
        case .greaterThanOrEqual: return order(l, r).map { $0 != .orderedAscending } ?? false
        case .between:
            guard case .list(let bounds) = right, bounds.count == 2,
                let low = Self.order(l, bounds[0]), let high = Self.order(l, bounds[1])
            else { return false }
            return low != .orderedAscending && high != .orderedDescending
        case .in:
            guard case .list(let values) = right else { return false }
            return values.contains { Self.equal(l, $0) }
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard case .string(let text) = l, case .string(let pattern)? = r else { return false }
            switch op {
            // By Unicode scalars (UTF-8 bytes), as `==` and the sort order compare, and as
            // MATCHES reads: Swift's `hasPrefix` and `contains` compare characters, which
            // made canonically equivalent spellings one here and two for `==`.
            case .beginsWith: return text.utf8.starts(with: pattern.utf8)
            case .endsWith: return Self.hasSuffix(text, pattern)
            case .contains: return Self.contains(text, pattern)
            case .like: return Self.like(Array(text.unicodeScalars), Array(pattern.unicodeScalars))
            default:
                guard let regex else { return false }
                return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            }
        }
    }

    private func order(_ l: Value, _ r: Value?) -> ComparisonResult? {
        guard let r else { return nil }
        return Self.order(l, r)
    }

    /// Orders two non-null values of comparable kinds; `nil` otherwise (comparisons with nil are false).
    static func order(_ l: Value, _ r: Value) -> ComparisonResult? {
        if l.isNull || r.isNull { return nil }
        return Value.compare(l, r)
    }

    static func equal(_ l: Value, _ r: Value) -> Bool {
        switch (l, r) {
        case (.int, .double), (.double, .int): return Value.compare(l, r) == .orderedSame
        // IEEE 754: NaN equals nothing, itself included (as `<` and `>` are false with it).
        case (.double(let a), .double(let b)): return a == b
        default: return l == r  // strings byte-wise, like the indexes (see `Value`)
        }
    }

    /// Whether `text` ends with the UTF-8 bytes of `suffix`.
    static func hasSuffix(_ text: String, _ suffix: String) -> Bool {
        let (text, suffix) = (text.utf8, suffix.utf8)
        guard suffix.count <= text.count else { return false }
        return text[text.index(text.endIndex, offsetBy: -suffix.count)...].elementsEqual(suffix)
    }

    /// Whether `text` holds the UTF-8 bytes of `part` (which, UTF-8 being self-synchronizing,
    /// start and end on scalars). Every string contains the empty one.
    static func contains(_ text: String, _ part: String) -> Bool {
        var text = text, part = part
        return text.withUTF8 { text in
            part.withUTF8 { part in
                guard let first = part.first else { return true }
                guard part.count <= text.count else { return false }
                var start = 0
                let last = text.count - part.count
                while start <= last {
                    if text[start] == first, memcmp(text.baseAddress! + start, part.baseAddress!, part.count) == 0 { return true }
                    start += 1
                }
                return false
            }
        }
    }

    /// `LIKE`: `*` matches any run of Unicode scalars, `?` any one (as `.` in MATCHES).
    static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var t = 0, p = 0
        var star = -1, mark = 0
        while t < text.count {
            // A `*` is a wildcard first (before it is compared with the text, which may hold
            // a `*` too: taken as that character, it left no point to come back to).
            if p < pattern.count && pattern[p] == "*" {
                star = p
                mark = t
                p += 1
            } else if p < pattern.count && (pattern[p] == "?" || pattern[p] == text[t]) {
                t += 1
                p += 1
            } else if star >= 0 {
                p = star + 1
                mark += 1
                t = mark
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}
