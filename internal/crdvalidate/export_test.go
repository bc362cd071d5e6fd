package crdvalidate

// ReadObjects is readObjects for the package's external tests.
var ReadObjects = readObjects
