"""graphops' own protobuf schema of TF's GraphDef (package `tensorflow`, so message names
match TF's): the .proto files and the modules regenerate.sh generates from them."""
