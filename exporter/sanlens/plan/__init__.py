"""`sanlens plan`: size LUNs and volumes, or estimate rebuild/migrate/bind time.

``plan luns`` (:mod:`sanlens.plan.luns`) answers "how many LUNs and volumes does
this workload need?"; ``plan rebuild|migrate|bind`` (:mod:`sanlens.plan.operations`)
turns a size and a priority into a duration. Every step is printed with its
formula so the answer can be checked by hand.
"""
