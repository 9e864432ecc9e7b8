"""Informers: the client-go `tools/cache` pipeline on the kernel.

    apiserver --list/watch--> Reflector --> RealFIFO --> process: Indexer, then handlers

See `docs/architecture.md` for the whole pipeline. Public names re-exported here.
"""

from controlplane.informers.fifo import RealFIFO
from controlplane.informers.reflector import Reflector
from controlplane.informers.shared_informer import ResourceEventHandler, SharedInformer
from controlplane.informers.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    deletion_handling_meta_namespace_key,
    meta_namespace_index_func,
    meta_namespace_key,
    split_meta_namespace_key,
)

__all__ = [
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "Indexer",
    "RealFIFO",
    "Reflector",
    "ResourceEventHandler",
    "SharedInformer",
    "deletion_handling_meta_namespace_key",
    "meta_namespace_index_func",
    "meta_namespace_key",
    "split_meta_namespace_key",
]
