# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The base class of conjugate cluster families (declarations in ``_family.pxd``)."""


cdef class Family:
    """A conjugate cluster family bound to one data set, for ``CollapsedChain``.

    A subclass fills ``c`` (the ``ConjugateFamily`` callbacks, with a context it
    owns and that holds the data and the callbacks' scratch) and ``n_points``, and
    provides the Python methods below. It must pickle (``__reduce__``): chain
    factories run chains in other processes, and :meth:`copy` relies on it.
    """

    failure_message = "A cluster's state is not numerically valid."

    def copy(self):
        """A family of the same model and data with scratch of its own.

        The callbacks write to the context's scratch, so each chain runs on its own
        copy. The model and the data are shared, not copied.
        """
        factory, arguments = self.__reduce__()
        return factory(*arguments)

    def describe(self, states):
        """The parameter tuple of a snapshot from its ``(K, width)`` states.

        The chain's ``snapshot()`` returns ``(labels, *describe(states), alpha,
        sizes)``; what comes in between is the estimator's business.
        """
        raise NotImplementedError
