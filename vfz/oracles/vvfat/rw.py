"""The named exceptions of vvfat's rw mode (kernel-vvfat): what the host directory vvfat wrote back shows otherwise than the guest kernel wrote, recognised from the evidence."""


def explain(ev):
    return None


def result_exception(op, expected, actual):
    return None


EXCEPTIONS = []
