import { EventStore } from "@whizbang/core"
import { EventStoreContract } from "@whizbang/testing"

EventStoreContract.run("in-memory", EventStore.layerMemory)
