"""The Burn Book's guide model: two convolutions, adaptive pooling, dropout and two linear layers."""

from __future__ import annotations

from typing import Any

from burn import Device, Tensor
from burn.nn import (
    AdaptiveAvgPool2dConfig,
    Config,
    Conv2dConfig,
    DropoutConfig,
    LinearConfig,
    Module,
    Relu,
)


class Model(Module):
    """``[batch, 28, 28]`` images to ``[batch, num_classes]`` logits."""

    def __init__(self, config: ModelConfig, device: Device) -> None:
        self.conv1 = Conv2dConfig([1, 8], [3, 3]).init(device)
        self.conv2 = Conv2dConfig([8, 16], [3, 3]).init(device)
        self.pool = AdaptiveAvgPool2dConfig([8, 8]).init()
        self.dropout = DropoutConfig(config.dropout).init()
        self.linear1 = LinearConfig(16 * 8 * 8, config.hidden_size).init(device)
        self.linear2 = LinearConfig(config.hidden_size, config.num_classes).init(device)
        self.activation = Relu()

    def forward(self, images: Tensor) -> Tensor:
        batch_size, height, width = images.dims()
        x = images.reshape([batch_size, 1, height, width])  # a channel dim for the convolutions

        x = self.conv1(x)  # [batch_size, 8, 26, 26]
        x = self.dropout(x)
        x = self.conv2(x)  # [batch_size, 16, 24, 24]
        x = self.dropout(x)
        x = self.activation(x)

        x = self.pool(x)  # [batch_size, 16, 8, 8]
        x = x.reshape([batch_size, 16 * 8 * 8])
        x = self.linear1(x)
        x = self.dropout(x)
        x = self.activation(x)

        return self.linear2(x)  # [batch_size, num_classes]


class ModelConfig(Config):
    """The guide model's settings."""

    num_classes: int
    hidden_size: int
    dropout: float = 0.5

    def init(self, device: Device) -> Model:
        """The model on ``device``, initialized as PyTorch initializes the same layers."""
        return Model(self, device)

    def init_with(self, record: dict[str, Any], device: Device) -> Model:
        """The model on ``device`` with the recorded weights (the Book's ``init_with``). Parameters are
        initialized lazily, so the random initial values are never computed: the record replaces them."""
        return self.init(device).load_record(record)
