using Queue.Core;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using Microsoft.AspNetCore.Mvc.Testing;
using Microsoft.AspNetCore.TestHost;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using MySqlConnector;
using Queue.Api;
using Queue.Core.Claims;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Work;

internal static class ClaimSignalExtensions
{
    public static void Notify(this WorkFixture fx) => fx.Service<WorkSignal>().Notify();
}
