"""Running graphs: Session (fetches, feeds, plan cache, default session) and the Scope API's
ClientSession. Imports building and runtime."""
