package tables

// Satisfies is the tests' reference evaluation of a scan.Filter on a row.
var Satisfies = satisfies
