"""The primary-key table's rules: the key-value layout and key checks, the merge engines that decide what a key reads as, and dynamic bucket assignment."""
