import ArgumentParser
struct Tail: ParsableCommand {}
struct Status: ParsableCommand {}
struct Export: ParsableCommand {}
