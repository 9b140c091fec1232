using System.Diagnostics.CodeAnalysis;

[assembly: SuppressMessage("Performance", "CA1861:Avoid constant arrays as arguments",
    Justification = "Request bodies in these tests are written inline as literals so each test reads as the HTTP call it makes; the allocation is irrelevant in a test.",
    Scope = "namespaceanddescendants", Target = "~N:Queue.Tests.Fairness")]
