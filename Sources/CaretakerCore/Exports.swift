// CaretakerCore is the top of caretaker's layers (Package.swift): code that imports
// it (the executables, the dashboard, the tests) sees every layer below and the
// parser targets without importing each.
@_exported import CaretakerConfig
@_exported import CaretakerDatabase
@_exported import CaretakerJobs
@_exported import CaretakerMail
@_exported import CaretakerMailFormat
@_exported import CaretakerMonitoring
@_exported import CaretakerSchedule
@_exported import CaretakerSupport
@_exported import CaretakerTOML
@_exported import CaretakerText
