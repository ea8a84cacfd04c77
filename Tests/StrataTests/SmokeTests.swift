import Testing
@testable import Strata
@Test func smoke() { #expect(ObjectID(entity: "A", number: 1).description == "A/1") }
