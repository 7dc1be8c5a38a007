"""The demo site (Knowledge Horizon): an example project's app built on pagechat; only this repo installs it."""
