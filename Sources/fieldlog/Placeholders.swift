import ArgumentParser
struct Tail: ParsableCommand {}
struct Status: ParsableCommand {}
