"""Datasets and data loading (Burn's ``burn::data``): the ``Dataset`` protocol, storage
(``InMemDataset``, ``SqliteDataset``), lazy transforms, vision datasets, the ``Batcher`` protocol and the
multi-threaded ``DataLoader``.

Example:
    >>> loader = (
    ...     DataLoaderBuilder(MnistBatcher())
    ...     .batch_size(64)
    ...     .shuffle(42)
    ...     .num_workers(4)
    ...     .build(MnistDataset.train())
    ... )  # doctest: +SKIP
"""

from ._dataset import Dataset as Dataset
from ._dataset import DatasetIterator as DatasetIterator
from ._dataset import InMemDataset as InMemDataset
from ._fetch import cache_dir as cache_dir
from ._fetch import fetch_wheel as fetch_wheel
from ._loader import Batcher as Batcher
from ._loader import DataLoader as DataLoader
from ._loader import DataLoaderBuilder as DataLoaderBuilder
from ._loader import DataLoaderIterator as DataLoaderIterator
from ._loader import split_dataloader as split_dataloader
from ._sqlite import SqliteDataset as SqliteDataset
from ._sqlite import SqliteDatasetError as SqliteDatasetError
from ._sqlite import SqliteDatasetWriter as SqliteDatasetWriter
from ._transform import ComposedDataset as ComposedDataset
from ._transform import Mapper as Mapper
from ._transform import MapperDataset as MapperDataset
from ._transform import PartialDataset as PartialDataset
from ._transform import SamplerDataset as SamplerDataset
from ._transform import SelectionDataset as SelectionDataset
from ._transform import ShuffledDataset as ShuffledDataset
from ._transform import WindowsDataset as WindowsDataset
from ._vision import ImageDatasetItem as ImageDatasetItem
from ._vision import ImageFolderDataset as ImageFolderDataset
from ._vision import MnistDataset as MnistDataset
from ._vision import MnistItem as MnistItem

__all__ = [
    # datasets
    "Dataset",
    "DatasetIterator",
    "InMemDataset",
    "SqliteDataset",
    "SqliteDatasetWriter",
    "SqliteDatasetError",
    # transforms
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "ShuffledDataset",
    "SamplerDataset",
    "SelectionDataset",
    "ComposedDataset",
    "WindowsDataset",
    # sources
    "MnistDataset",
    "MnistItem",
    "ImageFolderDataset",
    "ImageDatasetItem",
    "cache_dir",
    "fetch_wheel",
    # loading
    "Batcher",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderIterator",
    "split_dataloader",
]
