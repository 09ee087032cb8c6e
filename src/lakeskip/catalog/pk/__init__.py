"""The primary-key table's rules: the key-value layout and key checks, and the merge engines that decide what a key reads as."""
