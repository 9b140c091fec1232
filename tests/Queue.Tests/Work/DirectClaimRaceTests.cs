using System.Collections.Concurrent;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;

namespace Queue.Tests.Work;

public sealed class DirectClaimRaceTests(DirectClaimFixture fx) : ClaimRaceTests<DirectClaimFixture>(fx), IClassFixture<DirectClaimFixture>;
