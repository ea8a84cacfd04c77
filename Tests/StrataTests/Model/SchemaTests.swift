import Foundation
import Testing
@testable import Strata

@Suite struct SchemaTests {
    static let modelFile = """
    {
      "name": "Songbook",
      "version": 1,
      "entities": [
        {
          "name": "Artist",
          "attributes": [
            {"name": "artistID", "type": "int", "unique": true},
            {"name": "name", "type": "string", "optional": true, "indexed": true},
            {"name": "createdAt", "type": "date", "default": "2020-01-01T00:00:00Z"}
          ],
          "relationships": [
            {"name": "albums", "destination": "Album", "inverse": "artist", "toMany": true, "deleteRule": "cascade"}
          ],
          "defaultSort": [{"key": "name", "ascending": true}]
        },
        {
          "name": "Album",
          "attributes": [
            {"name": "albumID", "type": "int", "unique": true},
            {"name": "title", "type": "string", "minLength": 1, "maxLength": 200},
            {"name": "rating", "type": "double", "optional": true, "min": 0, "max": 5},
            {"name": "cover", "type": "data", "optional": true, "default": "AAEC"},
            {"name": "code", "type": "uuid", "optional": true, "default": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"},
            {"name": "explicit", "type": "bool", "default": false}
          ],
          "relationships": [
            {"name": "artist", "destination": "Artist", "inverse": "albums"}
          ]
        }
      ]
    }
    """

    static let swiftSchema = try! Schema("Songbook", version: 1, entities: [
        Entity("Artist",
               attributes: [Attribute("artistID", .int, unique: true),
                            Attribute("name", .string, optional: true, indexed: true),
                            Attribute("createdAt", .date, default: .date(Date(timeIntervalSince1970: 1_577_836_800)))],
               relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade)],
               defaultSort: [SortKey("name")]),
        Entity("Album",
               attributes: [Attribute("albumID", .int, unique: true),
                            Attribute("title", .string, minLength: 1, maxLength: 200),
                            Attribute("rating", .double, optional: true, min: .double(0), max: .double(5)),
                            Attribute("cover", .data, optional: true, default: .data(Data([0, 1, 2]))),
                            Attribute("code", .uuid, optional: true,
                                      default: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
                            Attribute("explicit", .bool, default: .bool(false))],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums")]),
    ])

    @Test func modelFileAndSwiftGiveTheSameFingerprint() throws {
        let fromFile = try Schema(modelFile: Data(Self.modelFile.utf8))
        #expect(fromFile == Self.swiftSchema)
        #expect(fromFile.fingerprint == Self.swiftSchema.fingerprint)
        #expect(fromFile.fingerprint.description.count == 64)
    }

    @Test func modelFileRoundTrips() throws {
        let text = Self.swiftSchema.modelFileJSON.prettyText
        let reread = try Schema(modelFile: Data(text.utf8))
        #expect(reread == Self.swiftSchema)
        #expect(reread.modelFileJSON == Self.swiftSchema.modelFileJSON)
    }

    @Test func fingerprintIgnoresNameVersionAndRenameHints() throws {
        var entities = Self.swiftSchema.entities
        entities[0].attributes[1].renamedFrom = "fullName"
        let renamed = try Schema("Other", version: 7, entities: entities)
        #expect(renamed.fingerprint == Self.swiftSchema.fingerprint)
    }

    enum ShapeChange: String, CaseIterable, Sendable {
        case optional, type, order, defaultValue, deleteRule, sort, indexed, maximum

        func apply(to e: inout [Entity]) {
            switch self {
            case .optional: e[0].attributes[1].isOptional = false
            case .type: e[1].attributes[1].type = .data
            case .order: e[1].attributes.swapAt(0, 1)
            case .defaultValue: e[1].attributes[5].defaultValue = .bool(true)
            case .deleteRule: e[0].relationships[0].deleteRule = .deny
            case .sort: e[0].defaultSort = [SortKey("name", ascending: false)]
            case .indexed: e[1].attributes[1].isIndexed = true
            case .maximum: e[1].attributes[2].maximum = .double(10)
            }
        }
    }

    @Test(arguments: ShapeChange.allCases)
    func fingerprintChangesWithShape(change: ShapeChange) throws {
        var entities = Self.swiftSchema.entities
        change.apply(to: &entities)
        let changed = try Schema("Songbook", entities: entities)
        #expect(changed.fingerprint != Self.swiftSchema.fingerprint, "changing \(change) must change the fingerprint")
    }

    /// Each broken model and the words its error must contain (entity, property, problem).
    static let broken: [(String, [String])] = [
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"integer"}]}]}"#,
         ["entity \"A\"", "property \"x\"", "unknown type \"integer\""]),
        (#"{"name":"S","entities":[{"name":"A","relationships":[{"name":"b","destination":"B","inverse":"a"}]}]}"#,
         ["entity \"A\"", "property \"b\"", "destination entity \"B\" does not exist"]),
        (#"{"name":"S","entities":[{"name":"A","relationships":[{"name":"b","destination":"B","inverse":"a"}]},{"name":"B","relationships":[{"name":"c","destination":"A","inverse":"b"}]}]}"#,
         ["entity \"A\"", "property \"b\"", "inverse \"a\" is not a relationship of \"B\""]),
        (#"{"name":"S","entities":[{"name":"A","relationships":[{"name":"b","destination":"B","inverse":"x"}]},{"name":"B","relationships":[{"name":"x","destination":"A","inverse":"other"},{"name":"other","destination":"A","inverse":"x"}]}]}"#,
         ["entity \"A\"", "property \"b\"", "points back to \"A.other\""]),
        (#"{"name":"S","entities":[{"name":"A"},{"name":"A"}]}"#, ["entity \"A\"", "used twice"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int"},{"name":"x","type":"string"}]}]}"#,
         ["entity \"A\"", "property \"x\"", "used by two properties"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int","default":"seven"}]}]}"#,
         ["property \"x\"", "\"default\"", "expected an int"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int","minLength":3}]}]}"#,
         ["property \"x\"", "minLength applies only to string and data"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int","min":5,"max":1}]}]}"#,
         ["property \"x\"", "min 5 is greater than max 1"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int","optinal":true}]}]}"#,
         ["property \"x\"", "unknown key \"optinal\""]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int"}],"defaultSort":[{"key":"y"}]}]}"#,
         ["entity \"A\"", "\"y\" is not an attribute of \"A\""]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int","unique":true},{"name":"y","type":"int","unique":true}]}]}"#,
         ["property \"y\"", "only one unique attribute"]),
        (#"{"name":"S","entities":[{"name":"A/B"}]}"#, ["entity \"A/B\"", "entity name must be"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"string","default":null}]}]}"#,
         ["property \"x\"", "default is nil but the attribute is not optional"]),
        (#"{"name":"S","entities":[{"name":"A","relationships":[{"name":"b","destination":"A"}]}]}"#,
         ["property \"b\"", "\"inverse\" is required"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"d","type":"date","default":"yesterday"}]}]}"#,
         ["property \"d\"", "not an ISO-8601 date"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"int","optional":1}]}]}"#,
         ["property \"x\"", "\"optional\" must be true or false"]),
        (#"{"name":"S","entities":[{"name":"A", "name":"B"}]}"#, ["not valid JSON", "duplicate key \"name\""]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"s","type":"string","maxLength":2,"default":"abc"}]}]}"#,
         ["property \"s\"", "longer than the maximum length 2"]),
        (#"{"name":"S","entities":[{"name":"A","attributes":[{"name":"s","type":"string","maxLength":2.5}]}]}"#,
         ["property \"s\"", "\"maxLength\" must be a whole number: 2.5 is not a whole number"]),
        (#"{"name":"S","version":"2","entities":[]}"#, ["\"version\" must be a whole number"]),
    ]

    /// A whole number written with a fraction or an exponent is a whole number in a model
    /// file, as in an import file.
    @Test func wholeNumbersMayBeWrittenWithAFraction() throws {
        let schema = try Schema(modelFile: Data(#"""
            {"name":"S","version":2.0,"entities":[{"name":"A","attributes":[
              {"name":"s","type":"string","minLength":1e0,"maxLength":5.0}]}]}
            """#.utf8))
        #expect(schema.version == 2)
        #expect(schema.entities[0].attributes[0].minLength == 1)
        #expect(schema.entities[0].attributes[0].maxLength == 5)
    }

    @Test(arguments: broken)
    func brokenModelsNameEntityAndProperty(json: String, words: [String]) {
        do {
            _ = try Schema(modelFile: Data(json.utf8))
            Issue.record("accepted a broken model: \(json)")
        } catch {
            for word in words {
                #expect(error.description.contains(word), "\"\(error.description)\" should contain \(word)")
            }
        }
    }

    @Test func objectIDsPrintParseAndEncode() throws {
        let id = ObjectID(entity: "Artist", number: 42)
        #expect(id.description == "Artist/42")
        #expect(ObjectID(parsing: "Artist/42") == id)
        for bad in ["Artist", "/42", "Artist/0", "Artist/-1", "Artist/x", "", "Art ist/4", "9Lives/1", "Artist/Song/3", "Artist-2/5"] {
            #expect(ObjectID(parsing: bad) == nil, "\(bad) must not parse")
        }
        #expect(ObjectID(parsing: "_Draft2/3") == ObjectID(entity: "_Draft2", number: 3))
        #expect(!EntityName.isInterned("Art ist") && !EntityName.isInterned("Artist/Song"))
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ObjectID].self, from: Data(#"["Art ist/4"]"#.utf8)) }
        let encoded = try JSONEncoder().encode([id])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["Artist\/42"]"# || String(decoding: encoded, as: UTF8.self) == #"["Artist/42"]"#)
        #expect(try JSONDecoder().decode([ObjectID].self, from: encoded) == [id])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ObjectID].self, from: Data(#"["Artist"]"#.utf8)) }
    }

    @Test func anObjectIDIsTwoWordsAndAValueThree() {
        // The entity name is interned and referred to by one word: rows hold many IDs and
        // values, and every byte of them is memory a large store keeps resident.
        #expect(MemoryLayout<ObjectID>.size == 16)
        #expect(MemoryLayout<Value>.stride == 24)
    }

    @Test func objectIDsOfEqualNamesAreEqualWhateverStringsMadeThem() {
        let built = String(["Ar", "tist"].joined())  // another String instance than the literal's
        let a = ObjectID(entity: "Artist", number: 7), b = ObjectID(entity: built, number: 7)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(b.entity == "Artist")
        #expect(a != ObjectID(entity: "Artists", number: 7))
        #expect(a != ObjectID(entity: "Artist", number: 8))
        #expect(ObjectID(entity: "Album", number: 9) < a && a < ObjectID(entity: "Artist", number: 8))
        let long = String(repeating: "LongEntityName", count: 4)  // not a small string
        #expect(ObjectID(entity: long, number: 1) == ObjectID(parsing: long + "/1"))
        #expect(ObjectID(entity: long, number: 1).description == long + "/1")
    }

    @Test func textNamingAnotherEntityIsNotInterned() throws {
        let stranger = "NeverAnEntity\(UInt64.random(in: 0...UInt64.max))"
        #expect(ObjectID(parsing: "\(stranger)/3", of: EntityName.interned("Artist")) == nil)
        #expect(ObjectID(parsing: "Artist/3", of: EntityName.interned("Artist")) == ObjectID(entity: "Artist", number: 3))
        #expect(!EntityName.isInterned(stranger))
        #expect(ObjectID(parsing: "\(stranger)/3")?.entity == stranger)
        #expect(EntityName.isInterned(stranger))
    }

    @Test func attributeChecksNameTheLimit() {
        let title = Attribute("title", .string, minLength: 1, maxLength: 3)
        #expect(AttributeCheck.problem(with: .string("abc"), for: title) == nil)
        #expect(AttributeCheck.problem(with: .string(""), for: title)?.contains("shorter than the minimum length 1") == true)
        #expect(AttributeCheck.problem(with: .string("abcd"), for: title)?.contains("longer than the maximum length 3") == true)
        #expect(AttributeCheck.problem(with: .null, for: title)?.contains("required") == true)
        #expect(AttributeCheck.problem(with: .int(1), for: title)?.contains("not a string") == true)
        let rating = Attribute("rating", .double, min: .double(0), max: .double(5))
        #expect(AttributeCheck.problem(with: .double(5.5), for: rating)?.contains("greater than the maximum 5.0") == true)
    }
}
