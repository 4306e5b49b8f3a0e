// The parser and schedule targets are part of CaretakerCore's public face: code
// that imports CaretakerCore (the executables, the dashboard, the tests) sees
// `Schedule`, `ZoneInfo`, `DurationText`, `TOMLDocument` and the text helpers
// without importing each small target.
@_exported import CaretakerMailFormat
@_exported import CaretakerSchedule
@_exported import CaretakerTOML
@_exported import CaretakerText
