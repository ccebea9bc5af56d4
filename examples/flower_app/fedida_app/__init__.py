"""FedIDA on Flower: the federation and each SuperNode's data are in task.py."""
