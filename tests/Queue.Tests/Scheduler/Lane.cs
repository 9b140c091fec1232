using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

internal sealed record Lane(long JobId, string Task, long Value, string Mode);
