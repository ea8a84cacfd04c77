enum StrataCommand {}
