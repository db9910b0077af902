// Placeholder spec: the example image replays fixed outcomes for the tests in this folder
// (see examples/suites/README.md). It exists so that the image has a real test layout.
